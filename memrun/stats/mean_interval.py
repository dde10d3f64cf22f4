"""The 95% interval of one run's mean score, read the way the comparison gate reads a delta.

A run's summary (:mod:`memrun.metrics.intervals`) gives each slice's mean per-item score
an interval. It follows the gate's statistics (:mod:`memrun.stats.gate`) without its
design simulation, which would cost seconds on every run:

1. the cluster bootstrap's percentile interval (:func:`memrun.stats.bootstrap.paired_bootstrap`
   of the scores against 0);
2. when the clusters are effectively few (Bell-McCaffrey degrees of freedom below
   ``SMALL_CLUSTERS - 1``), the union with the nominal small-cluster t interval
   ``mean -/+ t_{df, 0.975} SE``, SE = max(CR2 SE, the items' own SE)
   (:func:`memrun.stats.calibrated.studentized`, :func:`memrun.stats.small_clusters.bell_mccaffrey_df`).
   The percentile bootstrap under-covers with few clusters (Cameron, Gelbach & Miller
   2008): on a 200-question LoCoMo sample (141 scored, 10 conversations, a loopback
   reader and judge) it gave accuracy 53.2% [48.8, 57.3] where the union reads
   [43.6, 62.8]: the ten conversations' means spread less than the items' own noise,
   and the SE never goes below that.

An interval that cannot be read is recorded with its reason (``unreadable``) and its
bounds are None, so no renderer shows it: every scored item has the same score (nothing
varies), fewer than :data:`memrun.stats.verdict.MIN_CLUSTERS` clusters (one cluster is
redrawn whole every time; two give one contrast, a t on at most 1 degree of freedom, and
a bootstrap a 150-item conversation plus a 1-item one "covers" [44%, 100%]), fewer than 1
Bell-McCaffrey degree of freedom (one cluster holds nearly every item), or zero width.

Bounds are truncated to the parameter space (:func:`truncate`): a mean of scores in
[0, 1] lies in [0, 1], and a t interval's symmetric bounds can leave it. Truncation is
honest where refusing would not be: the true value lies in the space, so the truncated
interval covers it whenever the untruncated one did (coverage is unchanged), and it
drops only values that are impossible. A bound at the edge of the space is marked
(``truncated``) so a reader knows the data did not put it there.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from memrun.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, _cluster_totals, paired_bootstrap
from memrun.stats.calibrated import studentized
from memrun.stats.small_clusters import SMALL_CLUSTERS, bell_mccaffrey_df
from memrun.stats.student_t import t_quantile
from memrun.stats.verdict import too_few_clusters

PERCENTILE = "percentile_bootstrap"
NOMINAL_T = "cr2_t"
TOLERANCE = 1e-12
"""A spread or width at most this (fractions) is zero: float sums of equal means differ in the last bits."""


@dataclass(frozen=True)
class MeanInterval:
    """A run-level interval (module docstring), fractions: ``mean``; ``low``/``high`` the
    bounds shown (None when ``unreadable``); ``method`` :data:`PERCENTILE` or
    :data:`NOMINAL_T` (the interval whose lower bound is the union's); ``df`` the
    Bell-McCaffrey degrees of freedom (None with one cluster); ``bootstrap`` the percentile
    interval's ``[low, high]``; ``truncated`` whether a bound was cut to the parameter space;
    ``unreadable`` why no interval is shown, or None."""

    mean: float
    low: float | None
    high: float | None
    n_items: int
    n_clusters: int
    method: str
    df: float | None
    bootstrap: tuple[float, float]
    truncated: bool
    unreadable: str | None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (``bootstrap`` a list)."""
        out = asdict(self)
        out["bootstrap"] = list(self.bootstrap)
        return out


def truncate(low: float, high: float, lower: float, upper: float) -> tuple[float, float, bool]:
    """(low, high) cut to the parameter space [``lower``, ``upper``], and whether a bound
    was cut (module docstring: coverage is unchanged, only impossible values go)."""
    cut_low, cut_high = max(low, lower), min(high, upper)
    return cut_low, cut_high, (cut_low, cut_high) != (low, high)


def mean_interval(
    scores: ArrayLike,
    clusters: ArrayLike | Iterable[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    space: tuple[float, float] = (0.0, 1.0),
) -> MeanInterval:
    """The interval of the mean of ``scores`` (module docstring).

    Args:
        scores: shape (n,), per-item scores (fractions), n >= 1.
        clusters: None (every item its own cluster) or shape (n,) keys.
        resamples, seed, confidence: the bootstrap's settings (``paired_bootstrap``).
        space: the parameter space the bounds are truncated to.

    Raises:
        ValueError: from ``paired_bootstrap`` (empty or non-finite scores, clusters of another length).
    """
    values = np.asarray(scores, dtype=np.float64)
    boot = paired_bootstrap(values, clusters, resamples=resamples, seed=seed, confidence=confidence)
    low, high, method, df = boot.low, boot.high, PERCENTILE, None
    if boot.n_clusters >= 2:
        sums, sizes, inverse = _cluster_totals(values, clusters)
        sumsq = np.bincount(inverse, weights=values**2, minlength=len(sizes)).astype(np.float64)
        mean, se_arr, _ = studentized(sums, sumsq, sizes)
        df = bell_mccaffrey_df(sizes)
        if 1.0 <= df < SMALL_CLUSTERS - 1:  # effectively few clusters: the t interval joins
            half = t_quantile(df, 0.5 + confidence / 2) * float(se_arr)
            t_low, t_high = float(mean) - half, float(mean) + half
            method = NOMINAL_T if t_low <= boot.low else PERCENTILE
            low, high = min(low, t_low), max(high, t_high)
    why = _unreadable(values, boot.n_clusters, df, low, high)
    low, high, cut = truncate(low, high, *space)
    return MeanInterval(mean=boot.mean, low=None if why else low, high=None if why else high, n_items=boot.n_items,
                        n_clusters=boot.n_clusters, method=method, df=df, bootstrap=(boot.low, boot.high),
                        truncated=cut and not why, unreadable=why)


def _unreadable(values: np.ndarray, n_clusters: int, df: float | None, low: float, high: float) -> str | None:
    """Why the interval cannot be read (module docstring), or None; the same conditions as
    the gate's :func:`memrun.stats.gate.degenerate_reason`, plus the verdict's cluster floor."""
    if np.ptp(values) <= TOLERANCE:
        return (f"every scored item has the same score ({values[0]:.3g}): nothing varies, so no interval "
                "measures the uncertainty")
    if few := too_few_clusters(n_clusters):
        return few
    if df is not None and df < 1:
        return (f"the Bell-McCaffrey degrees of freedom are {df:.2f} (< 1): one cluster holds nearly every item, "
                "so the clusters carry almost no independent information")
    if not math.isfinite(high - low) or high - low <= TOLERANCE:
        return "the interval has zero width: nothing varies between resamples"
    return None


__all__ = ["NOMINAL_T", "PERCENTILE", "MeanInterval", "mean_interval", "truncate"]
