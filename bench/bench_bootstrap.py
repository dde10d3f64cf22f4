"""Time ``memrun compare`` as a whole process against a minimal numpy reference.

Usage: python bench/bench_bootstrap.py [--items 1000000] [--clusters 10000] [--pairs 3]
       [--resamples 2000] [--also-default]

Issue 37's rows: ``--items 100000 --clusters 1000 --resamples 2000`` (memrun within 1.5x
the numpy reference at the same resamples) and ``--items 1000000 --clusters 1000
--resamples 2000 --also-default`` (fewer resamples never cost more time or memory than
the default 10,000: a third column times memrun at its default).

Two retrieval-axis ``items.parquet`` files are written once (the documented schema,
``--items`` items in ``--clusters`` clusters and 5 categories, B a few points better
than A). Then, alternating in pairs (memrun, reference, memrun, reference, ...), each
side runs in a fresh subprocess and is timed from start to exit, imports included;
peak RSS is the child's own high-water mark (``VmHWM``), reported as it exits.

* memrun: ``python -m memrun compare A B --format json`` (everything it does: reading,
  pairing, the overall, per-category and small-cluster intervals, McNemar, Wilcoxon).
* reference: the least a correct answer needs, in plain numpy: read the five columns
  of both files, pair by item_id, drop errored/unscored items, per-cluster sums, one
  clustered percentile bootstrap of the overall delta (10,000 resamples).

Targets (issue 11): memrun < 5 s and < 1 GiB peak RSS on the 1M / 10k case. The ratio
column is memrun / reference of the medians; absolute seconds are noisy on shared
machines, the ratio is the figure to read. CPU seconds (user + system) are printed beside
wall seconds: memrun's bootstrap uses threads, the reference one core, so the wall ratio
depends on how many cores are free and the CPU ratio does not. memrun must exit 0 with a
pass (B is built better than A): any other exit code stops the bench, never timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _pairs import alternate, run_child  # noqa: E402
from memrun.stats.calibrated import SIMULATE_UP_TO  # noqa: E402

TARGET_S = 5.0
TARGET_MIB = 1024.0

REFERENCE = r'''
import sys
import numpy as np
import pyarrow.parquet as pq

cols = ["item_id", "error", "cluster", "category", "hit_at_5"]
a = pq.read_table(sys.argv[1], columns=cols)
b = pq.read_table(sys.argv[2], columns=cols)

def scores(t):
    ok = np.asarray(t.column("error").is_null()) & np.asarray(t.column("hit_at_5").is_valid())
    ids = t.column("item_id").to_numpy(zero_copy_only=False)[ok]
    return ids, t.column("hit_at_5").to_numpy(zero_copy_only=False)[ok].astype(float), \
        t.column("cluster").to_numpy(zero_copy_only=False)[ok]

ia, sa, ca = scores(a)
ib, sb, _ = scores(b)
order = np.argsort(ib)
pos = np.searchsorted(ib, ia, sorter=order)
pos[pos == len(ib)] = 0
match = ib[order[pos]] == ia
d = sb[order[pos]][match] - sa[match]
_, inverse = np.unique(ca[match], return_inverse=True)
sums = np.bincount(inverse, weights=d)
sizes = np.bincount(inverse).astype(float)
rng = np.random.default_rng(7)
B = int(sys.argv[3])
means = np.empty(B)
for start in range(0, B, 500):
    idx = rng.integers(0, len(sums), size=(min(500, B - start), len(sums)))
    means[start:start + 500] = np.take(sums, idx).sum(axis=1) / np.take(sizes, idx).sum(axis=1)
low, high = np.percentile(means, [2.5, 97.5])
print(f"{d.mean():+.4f} [{low:+.4f}, {high:+.4f}] n={d.size}")
'''


def write_runs(folder: Path, n: int, n_clusters: int) -> tuple[Path, Path]:
    """Two paired retrieval runs (A, B) with the documented schema and instrument."""
    from memrun.core.instrument import DENOMINATOR_RETRIEVAL, METADATA_KEY, Instrument
    from memrun.io.schema import items_schema

    rng = np.random.default_rng(20_240_601)
    cid = rng.integers(0, n_clusters, size=n)
    shift = rng.normal(0.0, 0.05, size=n_clusters)[cid]
    base = rng.random(n) < 0.6 + shift
    better = np.where(rng.random(n) < 0.1, True, base)
    better &= ~(rng.random(n) < 0.05)
    ids = np.char.add("it", np.arange(n).astype(str)).astype(object)
    clusters = np.char.add("conv-", cid.astype(str)).astype(object)
    categories = (np.arange(n) % 5 + 1).astype(str).astype(object)
    paths = []
    for name, hits in (("a", base), ("b", better)):
        inst = Instrument(axis="recall", benchmark="bench", split="bench", dataset_sha256="bench",
                          search_mode="lexical", denominator=DENOMINATOR_RETRIEVAL, ks=[5],
                          status="complete", run_id=f"bench-{name}", n_items=n)
        schema = items_schema([5]).with_metadata({METADATA_KEY: inst.to_json().encode()})
        data = {f.name: pa.nulls(n, f.type) for f in schema}
        data.update(
            run_id=pa.array(np.full(n, f"bench-{name}", dtype=object), pa.string()),
            item_id=pa.array(ids, pa.string()), repeat=pa.array(np.zeros(n, np.int32)),
            cluster=pa.array(clusters, pa.string()), category=pa.array(categories, pa.string()),
            category_label=pa.array(categories, pa.string()),
            hit_at_5=pa.array(hits), rr=pa.array(hits.astype(float)),
        )
        path = folder / f"{name}.parquet"
        pq.write_table(pa.table(data, schema=schema), path)
        paths.append(path)
    return paths[0], paths[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=3, help="memrun/reference pairs, alternated")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples, both sides")
    parser.add_argument("--also-default", action="store_true",
                        help="also time memrun at its default resamples (10,000), alternated with the others")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = write_runs(Path(tmp), args.items, args.clusters)
        ref_script = Path(tmp) / "reference.py"
        ref_script.write_text(REFERENCE)
        env = {"PYTHONPATH": str(ROOT)}
        # B is built better than A by ~4 pp over 10,000 clusters: the only right answer is a
        # pass (exit 0). Any other exit code stops the bench instead of being timed.
        memrun_cmd = ["memrun", "compare", str(a), str(b), "--format", "json", "--resamples", str(args.resamples)]
        pairs = alternate(lambda: run_child(memrun_cmd, env=env),
                          lambda: run_child([str(ref_script), str(a), str(b), str(args.resamples)], env=env), args.pairs)
        default = None
        if args.also_default:
            default = alternate(lambda: run_child(memrun_cmd[:-2], env=env),
                                lambda: run_child(memrun_cmd, env=env), args.pairs)
        verdict = json.loads(pairs.a[-1].stdout)
        if verdict["verdict"]["outcome"] != "pass":
            raise SystemExit(f"memrun compare said {verdict['verdict']['outcome']!r}, not pass: {verdict['verdict']}")
        o = verdict["overall"]
        m_s, r_s = pairs.median("a"), pairs.median("b")
        m_cpu, r_cpu = pairs.median_cpu("a"), pairs.median_cpu("b")
        m_mib, r_mib = pairs.peak("a"), pairs.peak("b")
        print(f"{args.items:,} paired items in {args.clusters:,} clusters, 5 categories, {args.pairs} pairs (A B A B), "
              f"{args.resamples:,} resamples both sides")
        print(f"{'':22}{'memrun compare':>16}{'numpy reference':>17}{'ratio':>8}{'target':>12}")
        print(f"{'wall s (median)':22}{m_s:16.2f}{r_s:17.2f}{m_s / r_s:8.2f}"
              f"{'< %g s' % TARGET_S:>12}  {'met' if m_s < TARGET_S else 'MISSED'}")
        print(f"{'CPU s (median)':22}{m_cpu:16.2f}{r_cpu:17.2f}{m_cpu / r_cpu:8.2f}"
              f"{'':>12}  (user + system: memrun's threads use free cores, the reference runs on one)")
        print(f"{'peak RSS MiB (max)':22}{m_mib:16.0f}{r_mib:17.0f}{m_mib / r_mib:8.2f}"
              f"{'< %g' % TARGET_MIB:>12}  {'met' if m_mib < TARGET_MIB else 'MISSED'}")
        print(f"memrun: B - A {100 * o['delta']:+.2f} pp [{100 * o['low']:+.2f}, {100 * o['high']:+.2f}], "
              f"verdict {verdict['verdict']['outcome']}")
        print(f"reference: {pairs.b[-1].stdout.strip()}")
        print("memrun runs s:", ", ".join(f"{x.seconds:.2f}" for x in pairs.a),
              "| reference runs s:", ", ".join(f"{x.seconds:.2f}" for x in pairs.b))
        check = o.get("design_check") or {}
        if check:
            how = (f"{check['replications']:,} replications a scenario" if check["replications"]
                   else f"Edgeworth expansion above {SIMULATE_UP_TO} clusters, no simulation")
            print(f"design check: {how}, nominal rate {100 * check['nominal_rate']:.1f}%")
        if default is not None:
            d_s, f_s = default.median("a"), default.median("b")
            print(f"memrun at the default 10,000 resamples vs --resamples {args.resamples:,} (alternated): wall s "
                  f"{d_s:.2f} vs {f_s:.2f}, peak RSS MiB {default.peak('a'):.0f} vs {default.peak('b'):.0f}: fewer "
                  + ("costs no more" if f_s <= d_s * 1.05 and default.peak("b") <= default.peak("a") * 1.02
                     else "COSTS MORE") + " (within the noise allowed: 5% wall, 2% peak RSS)")


if __name__ == "__main__":
    main()
