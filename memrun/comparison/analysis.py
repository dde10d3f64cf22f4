"""Statistics of a paired comparison: the verdict and everything reported beside it.

Computes, from :class:`memrun.comparison.pairing.Paired` (the paired, category-filtered
items; every figure reads those and nothing else): wins/ties/losses, discordance of the
majority labels, the paired clustered (optionally stratified) bootstrap of B minus A
overall, per category and stable-only, with the CR2 interval on Bell-McCaffrey degrees of
freedom beside it when the clusters are effectively few, the gate reading the wider
(:mod:`memrun.stats.gate`); the verdict (never pass or fail on a degenerate interval,
fewer than :data:`memrun.stats.MIN_CLUSTERS` clusters or
:data:`memrun.stats.MIN_PAIRED_ITEMS` items); Holm-adjusted per-category flags;
McNemar on binary scores (exact, or cluster-adjusted after Durkalski et al. 2003 when
items are clustered); a Wilcoxon signed-rank test over the independent units' (items' or
clusters') mean deltas of the scores the gate reads; flip rates; the judge correction
(its widening on the deciding interval's critical value) when a calibration is given. Returns plain data; reports render it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from memrun.comparison.credited import credited_counts, credited_hold
from memrun.comparison.fitness import DataThresholds, data_facts, data_hold
from memrun.comparison.pairing import Paired
from memrun.core.instrument import Difference
from memrun.metrics.by_category import category_order
from memrun.stats import (
    BootstrapResult,
    ExitCode,
    JudgeCalibration,
    SmallClusterResult,
    correct_for_judge,
    decide,
    holm,
    mcnemar_clustered,
    mcnemar_exact,
    wilcoxon_signed_rank,
    wilcoxon_skip_reason,
)
from memrun.stats.calibrated import LEVEL, REPLICATIONS, DesignCheck, assumption_line
from memrun.stats.gate import CALIBRATED, EVIDENCE, SMALL_CLUSTERS, gate_interval
from memrun.stats.mde import minimum_detectable
from memrun.stats.mean_interval import truncate
from memrun.stats.missing import ErrorBound, bounded
from memrun.stats.verdict import DEGENERATE, evidence_shortfall, too_few_clusters

SCORE_METRICS = ("mrr", "ndcg")
"""Metrics that are mean scores, not proportions: reported on their own 0-1 scale, never as %."""



def metric_unit(metric: str, axis: str | None) -> str:
    """``"pp"`` for proportions (recall@K, precision@K, accuracy), ``"score"`` for mean
    scores (MRR, nDCG@K), whose deltas read on the metric's 0-1 scale."""
    base = metric.removeprefix("session_").split("@")[0]
    return "score" if axis != "accuracy" and base in SCORE_METRICS else "pp"


@dataclass(frozen=True)
class Settings:
    """How to decide: fractions for deltas (the CLI converts pp)."""

    metric: str
    cluster_by: str | None
    resamples: int = 10_000
    seed: int = 7
    min_delta: float = 0.0
    band: float = 0.04
    treatments: tuple[str, ...] = ()
    calibration: JudgeCalibration | None = None
    stratify_by: str | None = None
    thresholds: DataThresholds = field(default_factory=DataThresholds)
    effect: float | None = None  # effect of interest for the power line (fractions); None: the band
    check_replications: int = REPLICATIONS  # the design check's simulated null comparisons per scenario, at least
    max_false_pass: float = LEVEL  # the design check's level (fraction)


def _counts(d: np.ndarray) -> dict[str, int]:
    return {"wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum())}


def _block(a: np.ndarray, b: np.ndarray, clusters: np.ndarray | None, strata: np.ndarray | None,
           s: Settings, evidence: np.ndarray | None = None, check: bool = False) -> dict[str, Any]:
    """One interval: the bootstrap, the CR2 interval, and which decides
    (:func:`memrun.stats.gate.gate_interval`); with ``evidence`` (shared-evidence
    clusters), the same under that clustering, the wider deciding.

    ``low``/``high`` are the deciding interval's (the wider one); ``interval`` names it,
    ``clustering`` the clustering it read (``given`` or ``evidence``), ``other`` the other
    clustering's interval (or None); ``n_clusters`` and ``bootstrap`` are the deciding
    clustering's; ``degenerate`` says why the interval cannot be read, ``insufficient``
    why the evidence is too thin (either holds the verdict).
    """
    d = b - a
    gate = gate_interval(d, clusters, strata, evidence=evidence, resamples=s.resamples, seed=s.seed,
                         null=s.min_delta, check=check, replications=s.check_replications, level=s.max_false_pass)
    boot = gate.bootstrap
    short = evidence_shortfall(int(d.size), boot.n_clusters)
    return {
        "n_items": int(d.size),
        "n_clusters": boot.n_clusters,
        **_counts(d),
        "a_mean": float(a.mean()),
        "b_mean": float(b.mean()),
        "delta": boot.mean,
        "low": gate.low,
        "high": gate.high,
        "p_value": gate.p_value,
        "crit": gate.crit,
        "interval": gate.decided,
        "insufficient": short[1] if short else gate.degenerate,
        "degenerate": gate.degenerate,
        "bootstrap": boot,
        "small_clusters": gate.small,
        "cr2_consulted": gate.consulted,
        "se": gate.se,
        "df": gate.df,
        "t_low": gate.t_low,
        "t_high": gate.t_high,
        "p_pass": gate.p_pass,
        "design_check": gate.check.to_dict() if gate.check else None,
        "clustering": gate.clustering,
        "other": None if gate.other is None else {
            "clustering": gate.other.clustering, "n_clusters": gate.other.bootstrap.n_clusters,
            "low": gate.other.low, "high": gate.other.high, "interval": gate.other.decided,
            "degenerate": gate.other.degenerate},
    }


@dataclass
class Comparison:
    """All figures of one comparison (fractions; reports scale to pp)."""

    run_a: str
    run_b: str
    axis: str | None
    metric: str
    unit: str
    denominator: str | None
    settings: Settings
    differences: list[Difference]
    overall: dict[str, Any]
    verdict: dict[str, Any]
    discordance: float
    per_category: dict[str, dict[str, Any]]
    stable_only: dict[str, Any] | None
    n_unstable: int
    mcnemar: dict[str, Any] | None
    wilcoxon: dict[str, Any] | None
    wilcoxon_skipped: str | None
    calibrated: dict[str, Any] | None
    flip_rate_a: float | None
    flip_rate_b: float | None
    only_a: int
    only_b: int
    excluded: dict[str, int]
    data: dict[str, Any] = field(default_factory=dict)
    power: dict[str, Any] | None = None
    estimands: dict[str, Any] | None = None
    categories: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    paired: Paired | None = field(default=None, repr=False)  # the items compared (memrun.comparison.flips)
    assumptions: str | None = None

    @property
    def noncomparable(self) -> bool:
        return bool(self.differences)

    @property
    def exit_code(self) -> int:
        """The verdict's exit code; 3 (refused) for a forced non-comparable comparison."""
        return int(ExitCode.REFUSAL) if self.noncomparable else int(self.verdict["exit_code"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; result objects flattened to their fields."""

        def clean(value: Any) -> Any:
            if isinstance(value, (BootstrapResult, SmallClusterResult)):
                return value.to_dict()
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            if isinstance(value, Difference):
                return asdict(value)
            return value

        out = {k: clean(v) for k, v in self.__dict__.items() if k not in ("settings", "paired")}
        out["settings"] = {k: v for k, v in asdict(self.settings).items() if k != "calibration"}
        out["settings"]["calibration"] = self.settings.calibration.to_dict() if self.settings.calibration else None
        out["noncomparable"] = self.noncomparable
        out["exit_code"] = self.exit_code
        return out


def _sub(values: np.ndarray | None, mask: np.ndarray) -> np.ndarray | None:
    return None if values is None else values[mask]


def _blocks(paired: Paired, s: Settings) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any] | None]:
    """(overall, per category, stable-only) blocks, computed on a thread pool.

    Each block seeds its own generator, so the figures do not depend on the scheduling;
    the bootstraps spend their time in numpy with the GIL released.
    """
    order = sorted(range(len(paired.category_names)), key=lambda i: category_order(paired.category_names[i]))
    masks: list[np.ndarray | None] = [None] + [paired.categories == i for i in order]
    with_stable = bool((~paired.stable).any() and paired.stable.any())
    if with_stable:
        masks.append(paired.stable)

    def block(mask: np.ndarray | None) -> dict[str, Any]:
        if mask is None:
            return _block(paired.a, paired.b, paired.clusters, paired.strata, s, paired.evidence, check=True)
        return _block(paired.a[mask], paired.b[mask], _sub(paired.clusters, mask), _sub(paired.strata, mask), s,
                      _sub(paired.evidence, mask))

    with ThreadPoolExecutor(max_workers=max(1, min(len(masks), os.cpu_count() or 1))) as pool:
        done = list(pool.map(block, masks))
    overall, stable_only = done[0], (done[-1] if with_stable else None)
    per_category = {paired.category_names[i]: {"label": paired.category_labels.get(paired.category_names[i],
                                                                                  paired.category_names[i]), **blk}
                    for i, blk in zip(order, done[1:len(order) + 1])}
    _holm_flags(per_category)
    return overall, per_category, stable_only


def _holm_flags(per_category: dict[str, dict[str, Any]]) -> None:
    """Holm-adjusted p-values and flags across the categories (family-wise 5%).

    A category with too little evidence for a verdict enters Holm's procedure with p = 1.
    """
    if not per_category:
        return
    p = [1.0 if blk["insufficient"] else blk["p_value"] for blk in per_category.values()]
    adjusted, reject = holm(p, alpha=0.05)
    for blk, adj, rej in zip(per_category.values(), adjusted, reject):
        blk["holm_p"] = float(adj)
        blk["holm_significant"] = bool(rej)


def _wilcoxon(paired: Paired, clusters: np.ndarray | None) -> tuple[dict[str, Any] | None, str | None]:
    """Wilcoxon over the gate's own unit: the independent units' mean deltas of the scores
    the gate reads (majority labels on the accuracy axis; ``clusters``, the clustering
    the gate's interval read, when they group items, items otherwise).

    Unit deltas are rounded to 12 decimals: equal means reached by different float sums
    (1/3 + 1/3 vs 2/3) must count as the ties they are in the signed ranks.
    """
    d, unit = paired.b - paired.a, "item"
    if clusters is not None and len(np.unique(clusters)) < paired.n:
        sizes = np.bincount(clusters).astype(float)
        used = sizes > 0
        d = np.bincount(clusters, weights=d)[used] / sizes[used]
        unit = "cluster"
    d = np.round(d, 12)
    zeros = np.zeros_like(d)
    result = wilcoxon_signed_rank(zeros, d, unit=unit)
    return (result.to_dict(), None) if result else (None, wilcoxon_skip_reason(zeros, d))


def _flip_rate(repeated: np.ndarray, flipped: np.ndarray) -> float | None:
    """Share of paired items with two or more non-error repeats whose labels disagree."""
    n = int(repeated.sum())
    return float(flipped.sum()) / n if n else None


def analyze(paired: Paired, settings: Settings, *, run_a: str, run_b: str, axis: str | None,
            denominator: str | None, differences: list[Difference],
            unfinished: tuple[str, str] | None = None) -> Comparison:
    """Run every statistic on ``paired`` (see the module docstring). ``unfinished``: (reason,
    words) when a run is not whole (:func:`memrun.comparison.fitness.unfinished_hold`): the
    verdict is held, the numbers computed as ever.

    Raises ValueError from the statistics (e.g. clusters that straddle strata).
    """
    a, b = paired.a, paired.b
    overall, per_category, stable_only = _blocks(paired, settings)
    decided_on: Any = overall
    calibrated = None
    warnings: list[str] = []
    bound = paired.error_bound or ErrorBound()
    if bound.k:
        overall["paired_low"], overall["paired_high"] = overall["low"], overall["high"]
        overall["low"], overall["high"] = bounded(overall["low"], overall["high"], overall["n_items"], bound)
        decided_on = overall
        warnings.append(f"{bound.k} item(s) errored in one arm only (A {bound.k_a}, B {bound.k_b}): the gate's "
                        "interval counts them at their worst case for B (lower bound) and best case (upper bound), "
                        f"not dropped: [{100 * overall['paired_low']:+.2f}, {100 * overall['paired_high']:+.2f}] pp "
                        f"over the paired items -> [{100 * overall['low']:+.2f}, {100 * overall['high']:+.2f}] pp")
    overall["error_bound"] = bound.to_dict()
    if settings.calibration is not None:
        boot = overall["bootstrap"]
        union = replace(boot, low=overall["low"], high=overall["high"])
        corrected = correct_for_judge(union, settings.calibration, crit=overall["crit"])
        calibrated = corrected.to_dict()
        if corrected.warning:
            warnings.append(corrected.warning)
        if corrected.corrected:
            decided_on = calibrated
    facts = data_facts(paired)
    credited, notes = credited_hold(paired, metric_unit(settings.metric, axis))
    if notes:
        facts["credited"] = credited_counts(paired)
        warnings.extend(notes)
    hold = unfinished or data_hold(facts, settings.thresholds) or ((DEGENERATE, overall["degenerate"]) if overall["degenerate"] else None)
    verdict = decide(Bounds.of(decided_on), min_delta=settings.min_delta,
                     band=settings.band, n_items=overall["n_items"],
                     n_clusters=overall["n_clusters"] if settings.cluster_by else None, hold=hold)
    if verdict.passed and credited:  # a pass that items credited for absence could make is held
        verdict = decide(Bounds.of(decided_on), min_delta=settings.min_delta, band=settings.band,
                         n_items=overall["n_items"], n_clusters=overall["n_clusters"] if settings.cluster_by else None,
                         hold=credited)
    if paired.null_clusters:
        warnings.append(f"{paired.null_clusters} paired item(s) have no {settings.cluster_by} value: "
                        "each was resampled as a cluster of its own")
    if settings.cluster_by and overall["cr2_consulted"]:
        which = ("the design-calibrated t interval" if overall["interval"] == CALIBRATED
                 else "the percentile bootstrap")
        df = overall["small_clusters"].df
        warnings.append(f"{overall['n_clusters']} clusters count as {df + 1:.1f} (Bell-McCaffrey degrees of freedom "
                        f"{df:.2f}): a percentile cluster bootstrap is too narrow with fewer than {SMALL_CLUSTERS}; "
                        f"the gate reads the lower of its bound and the design-calibrated t interval's, here {which}")

    n_unstable = int((~paired.stable).sum())
    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    units = paired.evidence if overall["clustering"] == EVIDENCE else paired.clusters  # the gate's unit
    mcnemar = None
    if binary and units is not None and len(np.unique(units)) < paired.n:  # clustered
        mcnemar = mcnemar_clustered(a, b, units).to_dict()
    elif binary:
        mcnemar = mcnemar_exact(a, b).to_dict()
    wilcoxon, skipped = _wilcoxon(paired, units)
    power = _power(overall, settings, b - a, paired.evidence if overall["clustering"] == EVIDENCE else paired.clusters)
    shown_verdict = verdict.to_dict()
    for blk in [overall, *per_category.values(), *([stable_only] if stable_only else [])]:
        _as_shown(blk)
    if calibrated is not None:
        _as_shown(calibrated, unreadable=overall["unreadable"])
    shown_verdict["low"], shown_verdict["high"], _ = truncate(shown_verdict["low"], shown_verdict["high"], -1.0, 1.0)
    accuracy = axis == "accuracy"
    discordance = float((paired.a_label != paired.b_label).mean()) if accuracy else float((a != b).mean())
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        axis=axis,
        metric=settings.metric if not accuracy else "majority label (correct = 1)",
        unit=metric_unit(settings.metric, axis),
        denominator=denominator,
        settings=settings,
        differences=differences,
        overall=overall,
        verdict=shown_verdict,
        discordance=discordance,
        per_category=per_category,
        stable_only=stable_only,
        n_unstable=n_unstable,
        mcnemar=mcnemar,
        wilcoxon=wilcoxon,
        wilcoxon_skipped=skipped,
        calibrated=calibrated,
        flip_rate_a=_flip_rate(paired.a_repeated, paired.a_flipped) if accuracy else None,
        flip_rate_b=_flip_rate(paired.b_repeated, paired.b_flipped) if accuracy else None,
        only_a=paired.only_a,
        only_b=paired.only_b,
        excluded=paired.excluded,
        data=facts,
        power=power,
        warnings=warnings,
        paired=paired,
        assumptions=assumption_line(DesignCheck(**_finite(overall["design_check"])) if overall["design_check"] else None,
                                    overall["n_clusters"], bool(settings.cluster_by)),
    )


def _as_shown(block: dict[str, Any], unreadable: str | None = None) -> None:
    """Make a block's ``low``/``high`` what may be printed, once the verdict and the power
    have read the interval as computed: the bounds truncated to [-1, 1] (a difference of
    two means of scores in [0, 1]; :func:`memrun.stats.mean_interval.truncate`: coverage is
    unchanged, and no decision moves, since the threshold and the null band lie inside) with
    ``truncated`` saying so (the other clustering's too), and ``unreadable`` the reason no interval is printed: the
    block's degenerate interval, or fewer than :data:`memrun.stats.verdict.MIN_CLUSTERS`
    clusters (one cluster is redrawn whole: a zero-width interval; two are one contrast)."""
    block["low"], block["high"], block["truncated"] = truncate(block["low"], block["high"], -1.0, 1.0)
    if block.get("other"):  # the other clustering's interval, printed beside (memrun.comparison.design)
        other = block["other"]
        other["low"], other["high"], other["truncated"] = truncate(other["low"], other["high"], -1.0, 1.0)
    block["unreadable"] = unreadable or too_few_clusters(block.get("n_clusters")) or block.get("degenerate")


def _power(overall: dict[str, Any], s: Settings, d: np.ndarray, clusters: np.ndarray | None) -> dict[str, Any] | None:
    """The power of the deciding interval: its minimum detectable effect and how far the
    power at it could be from 80% (:func:`memrun.stats.mde.minimum_detectable`, which
    ``memrun plan`` and ``bench/bench_gate_error.py --power`` read too); ``clusters`` the
    clustering the gate read."""
    if overall["degenerate"]:
        return None
    calibrated = overall["interval"] == CALIBRATED
    check = overall.get("design_check")
    return minimum_detectable(
        d, clusters, DesignCheck(**_finite(check)) if check else None, calibrated=calibrated,
        low=overall["low"], high=overall["high"], crit=overall["crit"],
        df=overall["df"] if calibrated and np.isfinite(overall["df"]) else None, null=s.min_delta,
        effect=s.effect if s.effect is not None else (s.band or 0.04), units="clusters" if s.cluster_by else "items",
        n_units=overall["n_clusters"] if s.cluster_by else overall["n_items"])


def _finite(check: dict[str, Any]) -> dict[str, Any]:
    """A design check's dict with None (infinite in JSON) back to inf."""
    return {k: (float("inf") if v is None and k in ("crit_up", "nominal_crit") else
                (float("-inf") if v is None and k == "crit_down" else v)) for k, v in check.items()}


@dataclass(frozen=True)
class Bounds:
    """An interval's bounds (fractions), for ``decide`` and ``band_from_null``."""

    low: float
    high: float

    @classmethod
    def of(cls, block: dict[str, Any]) -> Bounds:
        """The deciding interval of a ``_block`` (or calibrated) dict."""
        return cls(float(block["low"]), float(block["high"]))
