"""The interval the gate decides on, and when that interval cannot be read.

For per-item paired deltas (optionally clustered and stratified):

1. the paired cluster bootstrap (:func:`memrun.stats.bootstrap.paired_bootstrap`);
2. whenever there are 2 or more clusters, the CR2 interval with Bell-McCaffrey degrees
   of freedom (:func:`memrun.stats.small_clusters.cr2_interval`). It is *consulted* when
   its degrees of freedom are below ``SMALL_CLUSTERS - 1``: few clusters, or clusters so
   unequal that they count as few (one of 1,000 items beside nine of 50 is worth about
   two). A consulted CR2 interval decides when it is wider than the bootstrap's, which
   under-covers with few clusters (Cameron, Gelbach & Miller 2008).

Degenerate intervals never decide (:data:`memrun.stats.verdict.DEGENERATE`): every
item's delta equal (all tied: nothing varies), a consulted CR2 variance of exactly 0
(every cluster's mean delta equal), fewer than 1 degree of freedom, or zero width.

Shared evidence (``evidence``): when every item is its own cluster but some items share
an evidence session (LongMemEval's questions are item-level clusters within question
types, and questions drawn from one pool of sessions may share gold sessions), the same
deltas are also read clustered by shared evidence (no strata: a group may span types),
and the gate reads the wider of the two intervals. Items told to be independent while
groups of them share an effect make an interval too narrow: in
``bench/bench_gate_error.py`` (groups of 5 sharing a random effect, 600 replications) the
item-level gate passed 6.0 / 5.8% of null runs at ICC 0.05 / 0.2; the wider of the two
holds the evidence-clustered interval's level (about 2.5% in 4,000 replications) for a
power cost of a point or two at +5 pp when nothing is shared (ICC 0). An evidence-
clustered interval that cannot be read holds the verdict too.

The choice between CR2 with Bell-McCaffrey degrees of freedom and a restricted wild
cluster bootstrap (Rademacher, Webb) was made from measured false-pass rates:
``bench/bench_gate_error.py`` prints them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from memrun.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, BootstrapResult, paired_bootstrap
from memrun.stats.small_clusters import SMALL_CLUSTERS, SmallClusterResult, cr2_interval

PERCENTILE = "percentile_bootstrap"
CR2 = "cr2_bm"
GIVEN = "given"
EVIDENCE = "evidence"
TOLERANCE = 1e-12
"""A spread, standard error or width at most this (in the deltas' unit) is zero: float
sums of equal cluster means differ in the last bits."""


@dataclass(frozen=True)
class GateInterval:
    """The gate's interval: ``bootstrap``; ``small`` the CR2 interval (None with fewer
    than 2 clusters); ``consulted`` whether CR2 was read (few effective clusters);
    ``decided`` :data:`PERCENTILE` or :data:`CR2`; ``low``/``high``/``p_value`` the
    deciding interval's (fractions); ``degenerate`` why it cannot be read, or None;
    ``clustering`` :data:`GIVEN` (the clusters and strata passed) or :data:`EVIDENCE`
    (clusters of shared evidence decided); ``other`` the interval of the other clustering
    when both were computed, else None."""

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
) -> GateInterval:
    """The interval the gate reads (module docstring).

    Args:
        deltas: shape (n,), per-item B-minus-A deltas (fractions for labels).
        clusters, strata: None or shape (n,) keys, as for ``paired_bootstrap``.
        evidence: None or shape (n,) int codes of shared-evidence clusters: the deltas
            are also read so clustered (without strata) and the wider interval decides;
            an evidence-clustered interval that cannot be read decides too (it holds).
        resamples, seed, confidence: the bootstrap's settings.

    Raises:
        ValueError: from ``paired_bootstrap`` (bad deltas, clusters straddling strata...).
    """
    given = _one_clustering(deltas, clusters, strata, resamples=resamples, seed=seed, confidence=confidence)
    if evidence is None:
        return given
    shared = _one_clustering(deltas, evidence, None, resamples=resamples, seed=seed, confidence=confidence)
    shared = replace(shared, clustering=EVIDENCE)
    if shared.degenerate is None and (given.degenerate is not None or shared.width <= given.width):
        return replace(given, other=shared)
    return replace(shared, other=given)


def _one_clustering(deltas: ArrayLike, clusters: ArrayLike | Iterable[Hashable] | None,
                    strata: ArrayLike | Iterable[Hashable] | None, *, resamples: int, seed: int,
                    confidence: float) -> GateInterval:
    """The gate's interval under one clustering: the bootstrap, or CR2 when consulted and wider."""
    d = np.asarray(deltas, dtype=np.float64)
    boot = paired_bootstrap(d, clusters, resamples=resamples, seed=seed, confidence=confidence, strata=strata)
    small = cr2_interval(d, clusters, confidence=confidence) if boot.n_clusters >= 2 else None
    consulted = small is not None and small.df < SMALL_CLUSTERS - 1
    use_small = consulted and (small.high - small.low) > (boot.high - boot.low)
    decided = small if use_small else boot
    crit = small.crit if use_small else _normal_crit(confidence)
    return GateInterval(
        bootstrap=boot, small=small, consulted=consulted, decided=CR2 if use_small else PERCENTILE,
        low=decided.low, high=decided.high, p_value=decided.p_value, crit=crit,
        degenerate=degenerate_reason(d, small if consulted else None, decided.low, decided.high),
    )


def degenerate_reason(d: np.ndarray, small: SmallClusterResult | None, low: float, high: float) -> str | None:
    """Why an interval cannot be read (module docstring), or None.

    Args:
        d: shape (n,), the deltas; small: the consulted CR2 interval or None;
        low, high: the deciding interval's bounds.
    """
    if d.size and np.ptp(d) <= TOLERANCE:
        return (f"every paired item has the same delta ({100 * d[0]:+.1f} pp): nothing varies, so no interval "
                "measures the uncertainty (all items tied)")
    if small is not None and small.se <= TOLERANCE:
        return ("the CR2 variance is 0: every cluster's mean delta is the same, so between-cluster uncertainty "
                "cannot be measured from these clusters")
    if small is not None and small.df < 1:
        return (f"the Bell-McCaffrey degrees of freedom are {small.df:.2f} (< 1): one cluster holds nearly every "
                "item, so the clusters carry almost no independent information")
    if high - low <= TOLERANCE:
        return "the interval has zero width: nothing varies between resamples"
    return None


def _normal_crit(confidence: float) -> float:
    """The normal quantile a percentile interval stands in for (Δ/J widening reads it)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


__all__ = ["CR2", "EVIDENCE", "GIVEN", "PERCENTILE", "SMALL_CLUSTERS", "GateInterval", "degenerate_reason", "gate_interval"]
