"""How often does `memrun compare`'s gate say PASS when there is no difference? Every design
of issue 33's table (skewed cluster effects, few clusters, one dominant cluster, errors on
one side, a sweep of null arms), with a Wilson interval per cell.

    nice python bench/bench_gate_error.py                   # every cell, 2,000 replications
    nice python bench/bench_gate_error.py --reps 600        # quicker
    nice python bench/bench_gate_error.py --only skewed     # cells whose name contains this
    nice python bench/bench_gate_error.py --methods         # also the methods of bench/gate_methods.py
    nice python bench/bench_gate_error.py --power --pilots 40 --reps 40   # the MDE check
    nice python bench/bench_gate_error.py --icc-coverage --pilots 150     # the ICC interval the MDE's range reads

Model: :mod:`memrun.stats.simulation` (paired binary outcomes, a cluster random effect on
B - A, true delta 0; ``skewed``: the effect is tau * (1 - Exponential(1)), a tail of
clusters where B collapses). A cell is the share of replications whose gate said PASS at
--gate-min-delta 0 (nominal one-sided 2.5%; goal <= 3%), with its 95% Wilson interval.

Columns: ``memrun`` is exactly what `memrun compare` runs on the overall block
(:func:`memrun.stats.gate.gate_interval` with the design check, the error bound of
:mod:`memrun.stats.missing`, :func:`memrun.stats.verdict.decide` with its holds), bootstrap
resamples reduced to ``--resamples``; ``uncalibrated`` the same interval read with the
nominal t on Bell-McCaffrey df (no design check), and, on the error row, with the errored
items dropped (issue 20's gate); ``sim. nominal`` the mean over replications of the design
check's own simulated false-pass rate of the nominal gate (what `compare` prints beside the
verdict).

The sweep rows: k null arms against one baseline (each arm's deltas drawn independently,
LoCoMo-like clusters, ICC 0.05); a cell is the share of sweeps in which at least one arm
PASSed: ``memrun`` with Holm's step-down over the arms' one-sided gate p-values
(:func:`memrun.stats.family.family_verdicts`), ``uncalibrated`` each arm's own PASS.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memrun.stats.calibrated import design_check, icc_anova  # noqa: E402
from memrun.stats.family import family_verdicts  # noqa: E402
from memrun.stats.gate import CALIBRATED, gate_interval  # noqa: E402
from memrun.stats.mde import MEAN_ABS_EFFECT, METRIC_RANGE, SPREAD_CONFIDENCE, PowerModel, minimum_detectable  # noqa: E402
from memrun.stats.missing import bounded, one_sided_errors  # noqa: E402
from memrun.stats.simulation import (  # noqa: E402
    BASE_DISCORDANCE,
    LOCOMO_SIZES,
    Design,
    locomo_like,
    longmemeval_like,
    simulate,
    tau_for_icc,
)
from memrun.stats.verdict import DEGENERATE, decide  # noqa: E402


@dataclass(frozen=True)
class Cell:
    """One row: a design, its ICC, skewed or normal effects, and errors on one side."""

    name: str
    design: Design
    icc: float
    skewed: bool = False
    errors: float = 0.0  # share of items B errored on, all among the items B got wrong


def _lme(items: bool) -> Design:
    d = longmemeval_like(5, item_clusters=items)
    return Design(d.name, d.sizes, d.strata, d.hidden)


def cells() -> list[Cell]:
    """The rows of issue 33's table, then issue 20's designs."""
    loc = locomo_like(10)
    rows = []
    for g in (3, 5, 10):
        for icc in (0.05, 0.2):
            rows.append(Cell(f"skewed effects, {g} clusters", locomo_like(g), icc, skewed=True))
    for g in (20, 50):
        for icc in (0.05, 0.2):
            rows.append(Cell(f"skewed effects, {g} clusters", Design(f"{g}", (LOCOMO_SIZES * 5)[:g]), icc, skewed=True))
    rows += [Cell("3 clusters of 150-260, symmetric", Design("3", (150, 205, 260)), 0.2)]
    for big in (1500, 3000):
        for icc in (0.05, 0.2):
            rows.append(Cell(f"one cluster of {big:,} + 4x10", Design("dom", (big, 10, 10, 10, 10)), icc))
    for icc in (0.05, 0.2):
        rows.append(Cell("4.9% errored, all on items B got wrong (10 clusters)", loc, icc, errors=0.049))
    for icc in (0.0, 0.05, 0.2):
        rows.append(Cell("10 clusters, LoCoMo-like sizes", loc, icc))
    rows += [Cell("10 clusters, one of 1,000 + nine of 50", Design("u", (1000,) + (50,) * 9), 0.2),
             Cell("2 clusters", locomo_like(2), 0.2),
             Cell("LongMemEval default (item clusters, hidden groups of 5)", _lme(True), 0.2)]
    return rows


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of k successes in n (Wilson 1927), as fractions."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _errored(d: np.ndarray, share: float, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Mask of items kept after B errors on ``share`` of the items, all among those B got
    wrong while A got them right (delta -1), and how many errored."""
    k = min(int(share * len(d)), int((d < 0).sum()))
    drop = rng.choice(np.flatnonzero(d < 0), size=k, replace=False)
    keep = np.ones(len(d), dtype=bool)
    keep[drop] = False
    return keep, k


def gate_passes(d: np.ndarray, design: Design, seed: int, resamples: int, errors: float = 0.0,
                rng: np.random.Generator | None = None) -> tuple[bool, bool, float]:
    """(memrun passes, the uncalibrated gate passes, the check's simulated nominal rate)."""
    clusters, strata = design.cluster_codes(), design.stratum_codes()
    evidence = design.effect_groups() if design.hidden and len(design.sizes) == design.n_items else None
    keep, k = (np.ones(len(d), dtype=bool), 0) if not errors else _errored(d, errors, rng)
    dk, ck = d[keep], clusters[keep]
    sk = None if strata is None else strata[keep]
    ek = None if evidence is None else evidence[keep]
    out = []
    for check in (True, False):
        gate = gate_interval(dk, ck, sk, evidence=ek, resamples=resamples, seed=seed, check=check)
        low, high = gate.low, gate.high
        if check and k:  # B errored on k items that A got right: A's score 1, B's missing
            low, high = bounded(low, high, len(dk), one_sided_errors(np.ones(k), []))
        hold = (DEGENERATE, gate.degenerate) if gate.degenerate else None
        n_clusters = len(np.unique(ck)) if gate.clustering == "given" else gate.bootstrap.n_clusters
        verdict = decide(_Bounds(low, high), min_delta=0.0, band=0.04, n_items=len(dk), n_clusters=n_clusters,
                         hold=hold)
        out.append((verdict.passed, gate.check.nominal_rate if gate.check else math.nan))
    return out[0][0], out[1][0], out[0][1]


@dataclass(frozen=True)
class _Bounds:
    low: float
    high: float


CHUNK = 250
"""Replications a chunk: each chunk draws from its own seed, so a cell's chunks can be saved
(``--save``) and the run resumed without redrawing what is done."""


def run_chunk(cell: Cell, chunk: int, reps: int, resamples: int) -> tuple[int, int, float, int]:
    """(memrun passes, uncalibrated passes, sum of the design check's simulated nominal rates,
    replications the check ran on) over the ``reps`` null replications of chunk ``chunk``."""
    seed = [int(cell.icc * 1000), len(cell.design.sizes), cell.design.n_items, int(cell.skewed),
            int(cell.errors * 1000), chunk]
    rng = np.random.default_rng(seed)
    x = simulate(cell.design, icc=cell.icc, delta=0.0, reps=reps, rng=rng, skewed=cell.skewed)
    ours = base = 0
    rates, rated = 0.0, 0
    for r, d in enumerate(x):
        a, b, rate = gate_passes(d, cell.design, chunk * CHUNK + r, resamples, cell.errors, rng)
        ours += a
        base += b
        if not math.isnan(rate):
            rates, rated = rates + rate, rated + 1
    return ours, base, rates, rated


def resumable_chunks(key: str, reps: int, size: int, save: Path | None,
                     run: Callable[[int, int], Sequence[float]]) -> list[list[float]]:
    """Each chunk's counts, its replication count last, for ``reps`` replications in chunks of
    ``size``: ``run(chunk, n)`` computes one; with ``save``, each computed chunk is appended to
    that JSON-lines file under ``key`` and chunks already there (of the same n) are read back."""
    done: dict[int, list[float]] = {}
    if save is not None and save.exists():
        for line in save.read_text().splitlines():
            row = json.loads(line)
            if row["key"] == key:
                done[row["chunk"]] = row["counts"]
    chunks = []
    for chunk in range(math.ceil(reps / size)):
        n = min(size, reps - chunk * size)
        counts = done.get(chunk)
        if counts is None or counts[-1] != n:
            counts = [*run(chunk, n), n]
            if save is not None:
                with save.open("a") as f:
                    f.write(json.dumps({"key": key, "chunk": chunk, "counts": counts}) + "\n")
        chunks.append(counts)
    return chunks


def run_cell(cell: Cell, reps: int, resamples: int, save: Path | None = None) -> tuple[int, int, float]:
    """(memrun passes, uncalibrated passes, mean simulated nominal rate) over ``reps`` null
    replications, in chunks of :data:`CHUNK` saved to and resumed from ``save``."""
    key = f"{cell.name}|{cell.icc:g}|{cell.skewed}|{resamples}"
    chunks = resumable_chunks(key, reps, CHUNK, save, lambda chunk, n: run_chunk(cell, chunk, n, resamples))
    totals = np.sum([c[:4] for c in chunks], axis=0) if chunks else np.zeros(4)
    return int(totals[0]), int(totals[1]), float(totals[2] / totals[3]) if totals[3] else math.nan


SWEEP_CHUNK = 50
"""Sweeps a chunk of a sweep row (each from its own seed, saved by ``--save``)."""


def sweep_chunk(k: int, chunk: int, reps: int, resamples: int) -> tuple[int, int]:
    """(sweeps with a family-wise PASS under Holm, sweeps with any arm's own PASS) over the
    ``reps`` sweeps of chunk ``chunk``."""
    design = locomo_like(10)
    rng = np.random.default_rng([k, 33, chunk])
    clusters = design.cluster_codes()
    holm_any = raw_any = 0
    for r in range(reps):
        x = simulate(design, icc=0.05, delta=0.0, reps=k, rng=rng)
        seed = chunk * SWEEP_CHUNK + r
        gates = [gate_interval(d, clusters, resamples=resamples, seed=seed, check=True) for d in x]
        raw = [decide(g, n_items=len(d), n_clusters=10, hold=(DEGENERATE, g.degenerate) if g.degenerate else None).passed
               for g, d in zip(gates, x)]
        fam = family_verdicts([g.p_pass for g in gates], [g.degenerate is None and g.low > 0 for g in gates])
        holm_any += any(fam)
        raw_any += any(raw)
    return holm_any, raw_any


def run_sweep(k: int, reps: int, resamples: int, save: Path | None = None) -> tuple[int, int]:
    """(sweeps with a family-wise PASS under Holm, sweeps with any arm's own PASS) over
    ``reps`` sweeps of ``k`` null arms, in chunks saved to and resumed from ``save``."""
    chunks = resumable_chunks(f"sweep|{k}|{resamples}", reps, SWEEP_CHUNK, save,
                              lambda chunk, n: sweep_chunk(k, chunk, n, resamples))
    return int(sum(c[0] for c in chunks)), int(sum(c[1] for c in chunks))


@dataclass(frozen=True)
class PowerRow:
    """The MDE check of one design over its pilots (fractions): ``status`` counts the
    statements compare printed (trusted, loose, none, refused; ``held``: no power line, the
    gate held the verdict); over the pilots that printed an MDE, ``mde`` its mean,
    ``power``/``median`` the mean/median true power at it and ``se`` the mean's standard
    error, ``low``/``high`` the mean printed power range, ``covered`` the pilots whose true
    power lies in their printed range (+- 5 pp); ``none_right``: 'no effect detectable'
    statements the true design bears out (true power at the largest effect below 85%, or
    inside the range printed for it +- 5 pp);
    ``refused_right``: refusals whose withheld MDE has true power outside 80 +- 5 pp."""

    status: dict[str, int]
    mde: float
    power: float
    median: float
    se: float
    low: float
    high: float
    covered: int
    none_right: int
    refused_right: int


def power_check(cell: Cell, pilots: int, reps: int, resamples: int) -> PowerRow:
    """The MDE check: for each of ``pilots`` null datasets of the cell's design, exactly the
    power statement `memrun compare` prints (:func:`memrun.stats.mde.minimum_detectable`
    on the pilot's gate, the code path compare runs), then the true power at the printed (or
    withheld) MDE: the share of ``reps`` datasets of the TRUE design (the cell's ICC and
    effect shape) with that true delta that memrun's gate passes."""
    rng = np.random.default_rng([int(cell.icc * 1000), len(cell.design.sizes), int(cell.skewed), 80])
    clusters = cell.design.cluster_codes()
    mdes, powers, lows, highs = [], [], [], []
    status = {"trusted": 0, "loose": 0, "none": 0, "refused": 0, "held": 0}
    covered = none_right = refused_right = 0
    for p in range(pilots):
        pilot = simulate(cell.design, icc=cell.icc, delta=0.0, reps=1, rng=rng, skewed=cell.skewed)[0]
        gate = gate_interval(pilot, clusters, resamples=resamples, seed=p, check=True)
        statement = None if gate.degenerate else minimum_detectable(
            pilot, clusters, gate.check, calibrated=gate.decided == CALIBRATED, low=gate.low, high=gate.high,
            crit=gate.crit, df=gate.df if gate.decided == CALIBRATED else None, null=0.0, effect=0.04,
            units="clusters", n_units=len(cell.design.sizes))
        if statement is None:
            status["held"] += 1
            continue
        status[statement["status"]] += 1
        effect = METRIC_RANGE if statement["mde"] is None else statement["mde"]
        x = simulate(cell.design, icc=cell.icc, delta=effect, reps=reps, rng=rng, skewed=cell.skewed)
        true = sum(gate_passes(d, cell.design, r, resamples)[0] for r, d in enumerate(x)) / reps
        if statement["status"] == "none":
            none_right += true < 0.85 or statement["power_low"] - 0.05 <= true <= statement["power_high"] + 0.05
        elif statement["status"] == "refused":
            refused_right += abs(true - 0.8) > 0.05
        else:
            mdes.append(statement["mde"])
            powers.append(true)
            lows.append(statement["power_low"])
            highs.append(statement["power_high"])
            covered += statement["power_low"] - 0.05 <= true <= statement["power_high"] + 0.05
    n = len(mdes)
    se = float(np.std(powers, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    mean = (lambda v: float(np.mean(v)) if v else math.nan)
    return PowerRow(status, mean(mdes), mean(powers), float(np.median(powers)) if n else math.nan, se, mean(lows),
                    mean(highs), covered, none_right, refused_right)


def icc_coverage(design: Design, icc: float, skewed: bool, pilots: int) -> dict[str, tuple[int, int, float]]:
    """Per interval ("F": the one-way ANOVA F interval, which assumes normal effects;
    "printed": :attr:`memrun.stats.mde.PowerModel.icc_range`, what compare's power range is
    read over), over ``pilots`` null datasets of the design: (pilots whose upper limit is
    below the true ICC, pilots whose lower limit is above it, mean width). The true ICC is
    the power model's: tau**2 / (q0 + tau E|m|) (:data:`memrun.stats.mde.MEAN_ABS_EFFECT`)."""
    tau = tau_for_icc(icc)
    truth = tau**2 / (BASE_DISCORDANCE + tau * MEAN_ABS_EFFECT["skewed_down" if skewed else "normal"])
    rng = np.random.default_rng([int(icc * 1000), len(design.sizes), int(skewed), 90])
    clusters = design.cluster_codes()
    tail = (1 - SPREAD_CONFIDENCE) / 2
    out = {"F": [0, 0, 0.0], "printed": [0, 0, 0.0]}
    for d in simulate(design, icc=icc, delta=0.0, reps=pilots, rng=rng, skewed=skewed):
        sums, sizes = np.bincount(clusters, weights=d), np.bincount(clusters).astype(np.float64)
        squares = np.bincount(clusters, weights=d * d)
        f = (icc_anova(sums, squares, sizes, tail)[1], icc_anova(sums, squares, sizes, 1 - tail)[1])
        for name, (low, high) in (("F", f), ("printed", PowerModel(d, clusters, design_check(d, clusters)).icc_range)):
            row = out[name]
            row[0] += high < truth
            row[1] += low > truth
            row[2] += (high - low) / pilots
    return {k: (int(v[0]), int(v[1]), float(v[2])) for k, v in out.items()}


def pct(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def main(argv: list[str] | None = None) -> int:
    """Print the false-pass table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="null replications a cell (default 2,000)")
    parser.add_argument("--sweep-reps", type=int, default=400, help="null sweeps a sweep row (default 400)")
    parser.add_argument("--resamples", type=int, default=500, help="bootstrap resamples of memrun's gate")
    parser.add_argument("--only", help="only rows whose name contains this")
    parser.add_argument("--arms", type=int, nargs="+", default=[5, 10, 20], help="the sweep rows' arm counts")
    parser.add_argument("--icc", type=float, help="only rows of this ICC")
    parser.add_argument("--save", type=Path, help="append each finished chunk of a cell to this JSON-lines "
                        "file and resume from it (nothing lost when the run is stopped)")
    parser.add_argument("--power", action="store_true",
                        help="instead: the MDE check (power at the MDE memrun prints, per design; --reps then "
                             "counts datasets at each pilot's MDE, e.g. 50)")
    parser.add_argument("--pilots", type=int, default=100, help="--power: pilot datasets a design (default 100)")
    parser.add_argument("--icc-coverage", action="store_true",
                        help="instead: how often the ICC's 90%% interval holds the true ICC (--pilots datasets a row)")
    args = parser.parse_args(argv)
    if args.icc_coverage:
        print(f"the ICC's {100 * SPREAD_CONFIDENCE:.0f}% interval, {args.pilots} null datasets a row: the share whose "
              "interval holds the true ICC (misses below / above), and the mean width")
        print("| clusters | ICC | effects | F interval: held (below / above) | width | printed: held (below / above) "
              "| width |")
        print("|---|---|---|---|---|---|---|")
        for g in (3, 5, 10, 20, 50):
            design = locomo_like(g) if g <= 10 else Design(f"{g}", (LOCOMO_SIZES * 5)[:g])
            for icc in (0.0, 0.05, 0.2):
                for skewed in (False, True) if icc else (False,):
                    row = icc_coverage(design, icc, skewed, args.pilots)
                    cells_ = [f"{100 * (1 - (a + b) / args.pilots):.1f}% ({a} / {b}) | {w:.3f}" for a, b, w in row.values()]
                    print(f"| {g} | {icc:g} | {'skewed' if skewed else 'normal'} | {' | '.join(cells_)} |", flush=True)
        return 0
    if args.power:
        print(f"power at the printed MDE (goal 80% +- 5 pp): {args.pilots} pilot null datasets a design, each read "
              f"exactly as `memrun compare` reads it; {args.reps} datasets of the true design at each printed MDE")
        print("| design | ICC | effects | printed: trusted / loose / none / refused / held | mean MDE (pp) | "
              "true power: mean +- SE, median | printed range (mean) | true in range | none / refusals borne out | "
              "80 +- 5 |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for cell in cells():
            if (args.only and args.only not in cell.name) or (args.icc is not None and cell.icc != args.icc) \
                    or cell.errors or "LongMemEval" in cell.name or "2 clusters" == cell.name:
                continue
            row = power_check(cell, args.pilots, args.reps, args.resamples)
            st = row.status
            n = st["trusted"] + st["loose"]
            counts = f"{st['trusted']} / {st['loose']} / {st['none']} / {st['refused']} / {st['held']}"
            borne = f"{row.none_right}/{st['none']}, {row.refused_right}/{st['refused']}"
            head = f"| {cell.name} | {cell.icc:g} | {'skewed' if cell.skewed else 'normal'} | {counts} |"
            if not n:
                print(f"{head} - | - | - | - | {borne} | - (no MDE printed) |", flush=True)
                continue
            ok = "mean and median" if abs(row.power - 0.8) <= 0.05 and abs(row.median - 0.8) <= 0.05 else (
                "mean" if abs(row.power - 0.8) <= 0.05 else "median" if abs(row.median - 0.8) <= 0.05 else "NO")
            print(f"{head} {100 * row.mde:.2f} | **{100 * row.power:.1f}%** +- {100 * row.se:.1f}, "
                  f"{100 * row.median:.1f}% | {100 * row.low:.0f}-{100 * row.high:.0f}% | {row.covered}/{n} | {borne} "
                  f"| {ok} |", flush=True)
        return 0
    started = time.perf_counter()
    print(f"false PASS (%, 95% Wilson interval), true delta 0, {args.reps} replications a cell, gate min delta 0, "
          f"bootstrap {args.resamples} resamples, design check at its defaults")
    print("| design | ICC | effects | memrun | uncalibrated | sim. nominal |")
    print("|---|---|---|---|---|---|")
    for cell in cells():
        if (args.only and args.only not in cell.name) or (args.icc is not None and cell.icc != args.icc):
            continue
        ours, base, rate = run_cell(cell, args.reps, args.resamples, args.save)
        print(f"| {cell.name} | {cell.icc:g} | {'skewed' if cell.skewed else 'normal'} | **{pct(ours, args.reps)}** | "
              f"{pct(base, args.reps)} | {100 * rate:.1f} |", flush=True)
    if not args.only or "sweep" in args.only:
        print(f"\nsweeps of k null arms against one baseline (10 LoCoMo-like clusters, ICC 0.05), {args.sweep_reps} "
              "sweeps a row: share with at least one PASS")
        print("| arms | memrun (Holm, family-wise) | each arm's own gate |")
        print("|---|---|---|")
        for k in args.arms:
            holm_any, raw_any = run_sweep(k, args.sweep_reps, args.resamples, args.save)
            print(f"| {k} | **{pct(holm_any, args.sweep_reps)}** | {pct(raw_any, args.sweep_reps)} |", flush=True)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
