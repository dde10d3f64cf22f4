"""Time memrun.stats.paired_bootstrap against a plain loop and scipy.stats.bootstrap.

Usage: python bench/bench_bootstrap.py [--quick]

Every measurement runs in a fresh spawned process, so each "peak MiB" is that
process's own ru_maxrss (interpreter, numpy/scipy, the data and the work).
Data come from a seeded generator:

* binary: +1/0/-1 label deltas, wins ~10% (cluster-dependent), losses ~6%;
* mrr: reciprocal-rank differences, ranks 1..10 or a miss (at most 121 values);
* gauss: normal deltas, every value distinct (the worst case for type collapse).

Cluster keys are Python strings ("conv-00042"), as a harness would pass them;
mapping them to clusters is inside the timed call.

Baselines, both at the same 10,000 resamples:

* loop: per resample, draw C cluster indices with numpy and take the mean over the
  drawn clusters (per-cluster sums precomputed, inside the timing);
* scipy: scipy.stats.bootstrap on the deltas, percentile method, vectorised in
  batches that keep memory near 200 MB (unclustered cases only; scipy has no
  cluster resampling).

A baseline whose full run would exceed ~20 s is timed on fewer resamples and scaled
linearly; such figures are marked "~" and the resamples used are listed below.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESAMPLES = 10_000
FULL_RUN_LIMIT_S = 20.0

# (name, kind, n items, n clusters or None, target seconds or None)
CASES = [
    ("binary 100k/1k", "binary", 100_000, 1_000, 0.5),
    ("binary 1M/10k", "binary", 1_000_000, 10_000, 5.0),
    ("binary 1M flat", "binary", 1_000_000, None, 2.0),
    ("mrr 1M/10k", "mrr", 1_000_000, 10_000, None),
    ("mrr 1M flat", "mrr", 1_000_000, None, None),
    ("gauss 100k/1k", "gauss", 100_000, 1_000, None),
    ("gauss 1M/10k", "gauss", 1_000_000, 10_000, None),
    ("gauss 1M flat", "gauss", 1_000_000, None, None),
]


def make_data(kind: str, n: int, n_clusters: int | None) -> tuple[np.ndarray, list[str] | None]:
    rng = np.random.default_rng(20_240_601)
    cid = rng.integers(0, n_clusters or n, size=n)
    if kind == "binary":
        shift = rng.normal(0.0, 0.04, size=n_clusters)[cid] if n_clusters else 0.0
        u = rng.random(n)
        deltas = np.where(u < 0.10 + shift, 1.0, np.where(u > 0.94, -1.0, 0.0))
    elif kind == "mrr":
        def rr(hit_rate: float) -> np.ndarray:
            rank = np.minimum(rng.geometric(0.45, size=n), 10)
            return np.where(rng.random(n) < hit_rate, 1.0 / rank, 0.0)

        deltas = rr(0.72) - rr(0.70)
    else:
        deltas = rng.normal(0.01, 0.3, size=n)
    keys = None if n_clusters is None else [f"conv-{k:05d}" for k in cid]
    return deltas, keys


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_memrun(kind: str, n: int, n_clusters: int | None, repeats: int) -> dict:
    from memrun.stats import paired_bootstrap

    deltas, keys = make_data(kind, n, n_clusters)
    probe_start = time.perf_counter()
    result = paired_bootstrap(deltas, keys, resamples=200)  # probe: is a full run feasible?
    probe = (time.perf_counter() - probe_start) * RESAMPLES / 200
    resamples = RESAMPLES if probe < 3 * FULL_RUN_LIMIT_S else 500
    times = []
    for _ in range(repeats if resamples == RESAMPLES else 1):
        start = time.perf_counter()
        result = paired_bootstrap(deltas, keys, resamples=resamples)
        times.append(time.perf_counter() - start)
    seconds = min(times) * RESAMPLES / resamples
    return {"s": seconds, "used": resamples, "draw": result.draw, "mib": _peak_mib(),
            "line": result.line()}


def _cluster_sums(deltas: np.ndarray, keys: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    if keys is None:
        return deltas, np.ones(len(deltas))
    ids: dict[str, int] = {}
    inverse = np.array([ids.setdefault(k, len(ids)) for k in keys])
    return (np.bincount(inverse, weights=deltas),
            np.bincount(inverse).astype(np.float64))


def _loop(deltas: np.ndarray, keys: list[str] | None, resamples: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    sums, sizes = _cluster_sums(deltas, keys)
    means = np.empty(resamples)
    for b in range(resamples):
        idx = rng.integers(0, len(sums), size=len(sums))
        means[b] = sums[idx].sum() / sizes[idx].sum()
    return np.percentile(means, [2.5, 97.5])


def _scipy(deltas: np.ndarray, keys: object, resamples: int) -> object:
    from scipy import stats

    batch = max(1, 25_000_000 // len(deltas))
    return stats.bootstrap((deltas,), np.mean, n_resamples=resamples, batch=batch,
                           vectorized=True, method="percentile", rng=np.random.default_rng(7))


def run_baseline(which: str, kind: str, n: int, n_clusters: int | None) -> dict:
    fn = _loop if which == "loop" else _scipy
    deltas, keys = make_data(kind, n, n_clusters)
    probe_n = 20
    start = time.perf_counter()
    fn(deltas, keys, probe_n)
    per = (time.perf_counter() - start) / probe_n
    used = RESAMPLES if per * RESAMPLES <= FULL_RUN_LIMIT_S else max(probe_n, int(5.0 / per))
    start = time.perf_counter()
    fn(deltas, keys, used)
    seconds = (time.perf_counter() - start) * RESAMPLES / used
    return {"s": seconds, "used": used, "mib": _peak_mib()}


def in_child(fn, *args) -> dict:
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def fmt_s(row: dict | None) -> str:
    if row is None:
        return "-"
    return ("" if row["used"] == RESAMPLES else "~") + f"{row['s']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the baselines")
    args = parser.parse_args()
    header = ("case", "items", "clusters", "draw", "memrun s", "target", "peak MiB",
              "loop s", "loop/memrun", "scipy s", "scipy/memrun")
    rows, notes = [], []
    for name, kind, n, n_clusters, target in CASES:
        ours = in_child(run_memrun, kind, n, n_clusters, 3)
        loop = None if args.quick else in_child(run_baseline, "loop", kind, n, n_clusters)
        sp = None if args.quick or n_clusters else in_child(run_baseline, "scipy", kind, n, n_clusters)
        for label, r in (("memrun", ours), ("loop", loop), ("scipy", sp)):
            if r is not None and r["used"] != RESAMPLES:
                notes.append(f"{name}: {label} timed on {r['used']} resamples, scaled to {RESAMPLES}"
                             f" (peak {r['mib']:.0f} MiB)")
        rows.append((
            name, f"{n:,}", f"{n_clusters:,}" if n_clusters else "-", ours["draw"],
            fmt_s(ours), f"< {target:g}" if target else "-", f"{ours['mib']:.0f}",
            fmt_s(loop), f"{loop['s'] / ours['s']:.0f}x" if loop else "-",
            fmt_s(sp), f"{sp['s'] / ours['s']:.0f}x" if sp else "-",
        ))
        notes.append(f"{name}: {ours['line']}")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print(f"\n{RESAMPLES:,} resamples, seed 7, confidence 0.95; '~' = extrapolated:")
    for note in notes:
        print(f"  {note}")


if __name__ == "__main__":
    main()
