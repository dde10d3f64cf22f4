"""The interval the gate decides on, and when that interval cannot be read.

For per-item paired deltas (optionally clustered and stratified) the gate reads the union
of two intervals, so that PASS needs both lower bounds above the threshold (and FAIL both
upper bounds below it), whenever the clusters are effectively few (Bell-McCaffrey df below
``SMALL_CLUSTERS - 1``) or the design check found the nominal t gate above the level on
this design (its simulated false-pass rate over 3%); otherwise (many clusters, a design
the nominal t holds) the bootstrap alone, as the methodology's interval table has it:

1. the paired cluster bootstrap's percentile interval
   (:func:`memrun.stats.bootstrap.paired_bootstrap`), the methodology's "ships on the
   lower bound";
2. the design-calibrated t interval (:mod:`memrun.stats.calibrated`):
   ``[m - crit_up SE, m - crit_down SE]`` with SE = max(CR2 SE, the items' own SE), never
   narrower than the item-level noise of the same data, and critical values never below
   Student's t on the Bell-McCaffrey degrees of freedom
   (:func:`memrun.stats.small_clusters.bell_mccaffrey_df`). For the verdict's block
   (``check=True``) they are calibrated by simulating this design under the null with
   normal and skewed cluster effects (:func:`memrun.stats.calibrated.design_check`), so
   that at most 2.5% of simulated null comparisons pass; other blocks (categories, the
   stable-only pair) read the nominal t.

Why the union and not one method: the percentile cluster bootstrap under-covers with few
clusters (Cameron, Gelbach & Miller 2008), and t-type intervals are not robust to skewed
cluster effects (Hall 1992, sec. 3.5; the table in ``bench/bench_gate_error.py``: 4-12%
false PASS with the nominal critical value at 3-50 clusters); the restricted wild cluster
bootstrap (Rademacher, Webb weights) imposes symmetric cluster effects and fails the same
way with skew. Calibrating the critical value on the design's own null (a parametric
bootstrap of the studentized statistic: Beran 1988; Loh 1987) holds every design of that
table at or under 3%; the bootstrap beside it keeps the peer's rule.

Degenerate intervals never decide (:data:`memrun.stats.verdict.DEGENERATE`): every
item's delta equal (all tied: nothing varies), fewer than 1 Bell-McCaffrey degree of
freedom (one cluster holds nearly every item), a critical value that no simulation can
hold (the design check refused), or zero width.

Shared evidence (``evidence``): when every item is its own cluster but some items share
an evidence session (LongMemEval's questions are item-level clusters within question
types, and questions drawn from one pool of sessions may share gold sessions), the same
deltas are also read clustered by shared evidence (no strata: a group may span types),
and the gate reads the wider of the two intervals. Items told to be independent while
groups of them share an effect make an interval too narrow (``bench/bench_gate_error.py``).
An evidence-clustered interval that cannot be read holds the verdict too.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from memrun.lazy import lazy
from memrun.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    BootstrapResult,
    _cluster_totals,
    paired_bootstrap,
)
from memrun.stats.calibrated import LEVEL, REPLICATIONS, DesignCheck, design_check, studentized
from memrun.stats.small_clusters import SMALL_CLUSTERS, SmallClusterResult, cr2_interval

PERCENTILE = "percentile_bootstrap"
CR2 = "cr2_bm"
CALIBRATED = "calibrated_t"
GIVEN = "given"
EVIDENCE = "evidence"
if TYPE_CHECKING:
    from scipy import special as scipy_special
else:
    scipy_special = lazy("scipy.special")
TOLERANCE = 1e-12
"""A spread, standard error or width at most this (in the deltas' unit) is zero: float
sums of equal cluster means differ in the last bits."""


@dataclass(frozen=True)
class GateInterval:
    """The gate's interval: ``bootstrap``; ``small`` the CR2 interval (None with fewer
    than 2 clusters); ``consulted`` whether the clusters are effectively few (CR2's
    Bell-McCaffrey df below ``SMALL_CLUSTERS - 1``); ``decided`` :data:`CALIBRATED` or
    :data:`PERCENTILE`, the interval whose lower bound the gate reads; ``low``/``high``
    the union of the two (fractions); ``t_low``/``t_high`` the calibrated t interval's,
    ``se`` its standard error, ``crit`` its upper critical value (``crit_up``: Δ/J widening
    and power read it), ``df`` its Bell-McCaffrey degrees of freedom; ``p_value`` the
    two-sided p-value of zero of the interval shown (Holm across categories): the
    bootstrap's, or when the calibrated t interval joins the larger of it and the t's at
    the calibrated critical value, so p <= 5% only where the shown 95% interval excludes
    zero; ``p_pass`` the
    one-sided p-value of "B no better than the threshold" of the whole gate (family-wise
    control across arms reads it); ``check`` the design check (verdict block only) or None;
    ``degenerate`` why it cannot be read, or None; ``clustering`` :data:`GIVEN` or
    :data:`EVIDENCE`; ``other`` the interval of the other clustering, when computed."""

    bootstrap: BootstrapResult
    small: SmallClusterResult | None
    consulted: bool
    decided: str
    low: float
    high: float
    p_value: float
    crit: float
    degenerate: str | None
    clustering: str = GIVEN
    other: GateInterval | None = None
    t_low: float = float("nan")
    t_high: float = float("nan")
    se: float = float("nan")
    df: float = float("nan")
    p_pass: float = 1.0
    check: DesignCheck | None = None

    @property
    def width(self) -> float:
        """high - low (fractions)."""
        return self.high - self.low


def gate_interval(
    deltas: ArrayLike,
    clusters: ArrayLike | Iterable[Hashable] | None = None,
    strata: ArrayLike | Iterable[Hashable] | None = None,
    *,
    evidence: ArrayLike | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    null: float = 0.0,
    check: bool = False,
    replications: int = REPLICATIONS,
    level: float = LEVEL,
) -> GateInterval:
    """The interval the gate reads (module docstring).

    Args:
        deltas: shape (n,), per-item B-minus-A deltas (fractions for labels).
        clusters, strata: None or shape (n,) keys, as for ``paired_bootstrap``.
        evidence: None or shape (n,) int codes of shared-evidence clusters: the deltas
            are also read so clustered (without strata) and the wider interval decides;
            an evidence-clustered interval that cannot be read decides too (it holds).
        resamples, seed, confidence: the bootstrap's settings (the seed also seeds the
            design check).
        null: the threshold (``--gate-min-delta``, fractions) the design check simulates
            and ``p_pass`` tests.
        check: calibrate the critical values on this design (the verdict's block).
        replications, level: the design check's (:func:`memrun.stats.calibrated.design_check`).

    Raises:
        ValueError: from ``paired_bootstrap`` (bad deltas, clusters straddling strata...).
    """
    kw: dict[str, Any] = dict(resamples=resamples, seed=seed, confidence=confidence, null=null, check=check,
              replications=replications, level=level)
    given = _one_clustering(deltas, clusters, strata, **kw)
    if evidence is None:
        return given
    shared = replace(_one_clustering(deltas, evidence, None, **kw), clustering=EVIDENCE)
    if shared.degenerate is None and (given.degenerate is not None or shared.width <= given.width):
        return replace(given, other=shared)
    return replace(shared, other=given)


def _one_clustering(deltas: ArrayLike, clusters: ArrayLike | Iterable[Hashable] | None,
                    strata: ArrayLike | Iterable[Hashable] | None, *, resamples: int, seed: int,
                    confidence: float, null: float, check: bool, replications: int, level: float) -> GateInterval:
    """The gate's interval under one clustering: the union of the bootstrap's and the
    calibrated t interval."""
    d = np.asarray(deltas, dtype=np.float64)
    boot = paired_bootstrap(d, clusters, resamples=resamples, seed=seed, confidence=confidence, strata=strata)
    small = cr2_interval(d, clusters, confidence=confidence) if boot.n_clusters >= 2 else None
    consulted = small is not None and small.df < SMALL_CLUSTERS - 1
    sums, sizes, inverse = _cluster_totals(d, clusters)
    sumsq = np.bincount(inverse, weights=d**2, minlength=len(sizes)).astype(np.float64)
    mean, se_arr, _ = studentized(sums, sumsq, sizes, null)
    se = float(se_arr)
    verdict_check = None
    if small is None:
        crit_up = crit_down = df = math.nan
        t_low, t_high, p_t = -math.inf, math.inf, 1.0
    else:
        df = small.df
        if check:
            verdict_check = design_check(d, clusters, null=null, replications=replications, seed=seed,
                                         level=level, confidence=confidence)
            crit_up, crit_down, p_t = verdict_check.crit_up, verdict_check.crit_down, verdict_check.p_value
        else:
            crit_up = small.crit
            crit_down = -crit_up
            p_t = float(_t_sf(df, (float(mean) - null) / se)) if se > 0 else (0.0 if mean > null else 1.0)
        t_low = float(mean) - crit_up * se if math.isfinite(crit_up) else -math.inf
        t_high = float(mean) - crit_down * se if math.isfinite(crit_down) else math.inf
    joins = consulted or (verdict_check is not None and verdict_check.nominal_rate > verdict_check.level)
    low, high = (min(boot.low, t_low), max(boot.high, t_high)) if joins else (boot.low, boot.high)
    decided = CALIBRATED if joins and t_low <= boot.low else PERCENTILE
    p_boot = boot.p_value / 2 if boot.mean > null else 1.0 - boot.p_value / 2
    p_shown = max(boot.p_value, _t_two_sided(float(mean), se, df, crit_up, crit_down, confidence)) if joins \
        else boot.p_value
    why = degenerate_reason(d, small if consulted else None, low, high)
    if why is None and verdict_check is not None and verdict_check.refused:
        why = f"the design check refused a verdict: {verdict_check.refused}"
    return GateInterval(
        bootstrap=boot, small=small, consulted=consulted, decided=decided,
        low=low, high=high, p_value=min(1.0, p_shown), crit=crit_up if small is not None else _normal_crit(confidence),
        degenerate=why, t_low=t_low, t_high=t_high, se=se, df=df,
        p_pass=min(1.0, max(p_t, p_boot if null == 0 else 0.0)), check=verdict_check,
    )


def _t_two_sided(mean: float, se: float, df: float, crit_up: float, crit_down: float, confidence: float) -> float:
    """Two-sided p-value of a zero delta read at the calibrated t interval's critical values:
    the statistic ``mean / se`` is scaled by the t quantile over the critical value of its
    side, so that p <= 1 - ``confidence`` exactly when that interval excludes zero (a raised
    critical value raises p with it). 1 when there is no t interval or no spread."""
    crit = crit_up if mean > 0 else -crit_down
    if not (se > 0 and math.isfinite(crit) and crit > 0 and math.isfinite(df) and df > 0):
        return 1.0
    quantile = float(scipy_special.stdtrit(df, 0.5 + confidence / 2))
    return min(1.0, 2.0 * _t_sf(df, abs(mean) / se * quantile / crit))


def _t_sf(df: float, t: float) -> float:
    """P(T_df > t), Student's t upper tail."""
    return float(scipy_special.stdtr(df, -t))


def degenerate_reason(d: np.ndarray, small: SmallClusterResult | None, low: float, high: float) -> str | None:
    """Why an interval cannot be read (module docstring), or None.

    Args:
        d: shape (n,), the deltas; small: the consulted CR2 interval or None;
        low, high: the deciding interval's bounds.
    """
    if d.size and np.ptp(d) <= TOLERANCE:
        return (f"every paired item has the same delta ({100 * d[0]:+.1f} pp): nothing varies, so no interval "
                "measures the uncertainty (all items tied)")
    if small is not None and small.df < 1:
        return (f"the Bell-McCaffrey degrees of freedom are {small.df:.2f} (< 1): one cluster holds nearly every "
                "item, so the clusters carry almost no independent information")
    if high - low <= TOLERANCE:
        return "the interval has zero width: nothing varies between resamples"
    return None


def _normal_crit(confidence: float) -> float:
    """The normal quantile a percentile interval stands in for (Δ/J widening reads it)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


__all__ = ["CALIBRATED", "CR2", "EVIDENCE", "GIVEN", "PERCENTILE", "SMALL_CLUSTERS", "GateInterval", "degenerate_reason", "gate_interval"]
