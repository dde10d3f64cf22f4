"""Classical paired tests beside the bootstrap: McNemar (exact, or cluster-adjusted),
Wilcoxon signed-rank over paired units, and Holm's adjustment for several intervals read
at once.

scipy.special loads at the first McNemar test (:mod:`memrun.lazy`); Wilcoxon is numpy
alone (scipy.stats takes about a second of CPU to import).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memrun.lazy import lazy

if TYPE_CHECKING:
    from scipy import special as scipy_special
else:
    scipy_special = lazy("scipy.special")


@dataclass(frozen=True)
class McNemarResult:
    """McNemar test. ``b01``: pairs A got wrong and B got right; ``b10``: pairs A got
    right and B got wrong; ``n_pairs``: all pairs; ``p_value``: two-sided; ``method``
    ``"exact"`` (independent pairs) or ``"durkalski"`` (cluster-adjusted, over
    ``n_clusters`` clusters); None, with ``skipped`` saying why, when the discordant pairs
    lie in a single cluster (one cluster gives no between-cluster variance to test on)."""

    b01: int
    b10: int
    n_pairs: int
    p_value: float | None
    method: str = "exact"
    n_clusters: int | None = None
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class WilcoxonResult:
    """Wilcoxon signed-rank test over paired units (items or clusters, each scored by its
    mean over repeats). ``statistic`` is scipy's (the smaller rank sum for a two-sided
    test); ``mean_delta`` is the mean of b - a over units, in the metric's unit;
    ``n_units`` counts the units and ``n_nonzero`` those with a non-zero difference
    (zeros are dropped, Wilcoxon's convention); ``unit`` names what a unit is;
    ``min_p`` is the smallest two-sided p-value any data on ``n_nonzero`` units can reach
    (``2 / 2**n_nonzero``: all signs alike): with few clusters it can exceed 0.05."""

    statistic: float
    p_value: float
    n_units: int
    n_nonzero: int
    mean_delta: float
    unit: str = "item"
    min_p: float = 0.0
    method: str = "exact"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


EXACT_UNITS = 50
"""Up to this many non-zero units Wilcoxon's p-value is exact (no ties) or a permutation
p-value over all 2**n sign vectors (ties); above it the normal approximation."""


def _as_bool(name: str, values: ArrayLike) -> NDArray[np.bool_]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "iuf" or not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must hold booleans or 0/1 values")
        arr = arr.astype(bool)
    return arr


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> McNemarResult:
    """Exact (binomial) McNemar test of paired correctness.

    Args:
        a_correct, b_correct: shape (n,), booleans (or 0/1), one per paired item.

    Returns:
        McNemarResult; the p-value is the two-sided exact binomial test of
        b01 successes in b01 + b10 trials at p = 0.5, and 1.0 when there is no
        discordant pair. At p = 0.5 the binomial is symmetric, so the two-sided
        p-value (outcomes no more likely than the one observed) is
        ``min(1, 2 * P(X <= min(b01, b10)))``, computed with ``scipy.special.bdtr``
        (``scipy.stats.binomtest`` gives the same value and imports ~1 s of code).

    Raises:
        ValueError: not 1-D, lengths differ, empty, or values other than 0/1.

    Source: McNemar (1947); exact form as in Fagerland, Lydersen & Laake (2013),
    via ``scipy.stats.binomtest``.
    """
    a = _as_bool("a_correct", a_correct)
    b = _as_bool("b_correct", b_correct)
    if len(a) != len(b):
        raise ValueError(f"a_correct has {len(a)} items but b_correct has {len(b)}")
    if len(a) == 0:
        raise ValueError("mcnemar_exact needs at least one pair")

    b01 = int(np.count_nonzero(~a & b))
    b10 = int(np.count_nonzero(a & ~b))
    discordant = b01 + b10
    p = 1.0 if discordant == 0 else float(2.0 * scipy_special.bdtr(min(b01, b10), discordant, 0.5))
    return McNemarResult(b01=b01, b10=b10, n_pairs=len(a), p_value=min(1.0, p))


def mcnemar_clustered(a_correct: ArrayLike, b_correct: ArrayLike, clusters: ArrayLike) -> McNemarResult:
    """Cluster-adjusted McNemar test of paired correctness (Durkalski et al. 2003).

    With b_k and c_k the pairs of cluster k that only B and only A got right,

        X2 = (sum_k (b_k - c_k))**2 / sum_k (b_k - c_k)**2,   X2 ~ chi-square(1),

    which is McNemar's (b - c)**2 / (b + c) when every pair is its own cluster. Pairs in
    one cluster are correlated (one conversation's questions); the plain McNemar test
    treats them as independent and reports p < .05 in most null runs once the clusters
    differ (issue 20: 55% at ICC 0.05 with LoCoMo-like clusters).

    Args:
        a_correct, b_correct: shape (n,), booleans or 0/1, one per paired item.
        clusters: shape (n,), int cluster codes (0..G-1).

    Returns:
        McNemarResult with ``method="durkalski"``; p = 1 without discordant pairs; no
        p-value (None, ``skipped`` says why) from one cluster, or when one cluster holds
        every non-zero contrast. Like every cluster-level test it needs many clusters:
        with few, read the interval.

    Raises:
        ValueError: as :func:`mcnemar_exact`, or clusters of another length.

    Source: Durkalski, V. L., Palesch, Y. Y., Lipsitz, S. R. & Rust, P. F. (2003),
    "Analysis of clustered matched-pair data", Statistics in Medicine 22(15), 2417-2428;
    Obuchowski, N. A. (1998), Statistics in Medicine 17(13), 1495-1507, for the setting.
    """
    a = _as_bool("a_correct", a_correct)
    b = _as_bool("b_correct", b_correct)
    codes = np.asarray(clusters)
    if not (len(a) == len(b) == len(codes)):
        raise ValueError(f"a_correct, b_correct and clusters have {len(a)}, {len(b)} and {len(codes)} items")
    if len(a) == 0:
        raise ValueError("mcnemar_clustered needs at least one pair")

    _, inverse = np.unique(codes, return_inverse=True)
    diff = np.bincount(inverse, weights=(~a & b).astype(float) - (a & ~b).astype(float))
    b01, b10 = int(np.count_nonzero(~a & b)), int(np.count_nonzero(a & ~b))
    denominator = float((diff**2).sum())
    carrying = int(np.count_nonzero(diff))
    if len(diff) < 2 or (b01 + b10 and carrying < 2):
        return McNemarResult(b01=b01, b10=b10, n_pairs=len(a), p_value=None, method="durkalski",
                             n_clusters=len(diff), skipped=f"{len(diff) if len(diff) < 2 else carrying} cluster "
                             "carries every discordant pair: a chi-square on one cluster's contrast has no "
                             "reference distribution")
    p = 1.0 if denominator == 0 else float(scipy_special.chdtrc(1, (b01 - b10) ** 2 / denominator))
    return McNemarResult(b01=b01, b10=b10, n_pairs=len(a), p_value=min(1.0, p), method="durkalski",
                         n_clusters=len(diff))


def _unit_arrays(a_means: ArrayLike, b_means: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(a_means, dtype=np.float64)
    b = np.asarray(b_means, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"per-unit means must be 1-D, got shapes {a.shape} and {b.shape}")
    if len(a) != len(b):
        raise ValueError(f"a_means has {len(a)} units but b_means has {len(b)}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("per-unit means contain NaN/inf")
    return a, b


def wilcoxon_skip_reason(a_means: ArrayLike, b_means: ArrayLike) -> str | None:
    """Why ``wilcoxon_signed_rank`` would return None, or None when the test can run.

    Args:
        a_means, b_means: shape (u,), per-unit mean scores of arm A and arm B, paired.

    Returns:
        ``"fewer than 2 paired units"``, ``"every paired difference is zero"``, or None.

    Raises:
        ValueError: not 1-D, lengths differ, or NaN/inf values.
    """
    a, b = _unit_arrays(a_means, b_means)
    if len(a) < 2:
        return "fewer than 2 paired units"
    if not np.any(b - a):
        return "every paired difference is zero"
    return None


def wilcoxon_signed_rank(a_means: ArrayLike, b_means: ArrayLike, *, unit: str = "item") -> WilcoxonResult | None:
    """Paired Wilcoxon signed-rank test of B against A over paired units.

    Args:
        a_means, b_means: shape (u,), each unit's mean score over repeats (the
            methodology's "per-task means across seeds"), paired by unit, in the
            metric's unit. Units must be independent: pass items, or cluster means
            when items within a cluster are correlated.
        unit: what a unit is (``"item"``, ``"cluster"``), recorded in the result.

    Returns:
        WilcoxonResult (two-sided) over the non-zero differences (Wilcoxon's convention:
        zeros are dropped): with at most :data:`EXACT_UNITS` of them, the exact null
        distribution when their magnitudes have no ties (``method="exact"``), else the
        permutation distribution of the (mid)ranks' signed sum over all 2**n sign vectors
        (``"permutation"``), both by convolution; beyond, the tie-corrected normal
        approximation without continuity correction (``"normal"``). Two-sided p-value:
        twice the smaller tail, at most 1.
        The normal approximation is poor for a few units with ties or zeros (issue 33:
        0.042 against an exact 0.051). None when the test cannot run; the reason is
        ``wilcoxon_skip_reason(a_means, b_means)``.

    Raises:
        ValueError: not 1-D, lengths differ, or NaN/inf values.

    Source: Wilcoxon (1945); equal to ``scipy.stats.wilcoxon(zero_method="wilcox")`` with
    ``method="exact"`` / a full ``PermutationMethod`` / ``"approx"`` (tests), computed here
    in numpy: importing scipy.stats took most of a 100k-item compare's CPU.
    """
    if wilcoxon_skip_reason(a_means, b_means) is not None:
        return None

    a, b = _unit_arrays(a_means, b_means)
    diff = b - a
    nonzero = diff[diff != 0]
    n = len(nonzero)
    ranks, ties = _midranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks.sum()) - r_plus
    if n > EXACT_UNITS:
        method = "normal"
        variance = (n * (n + 1.0) * (2.0 * n + 1.0) - float((ties**3 - ties).sum()) / 2.0) / 24.0
        z = (r_plus - n * (n + 1.0) / 4.0) / math.sqrt(variance)
        p_value = min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))
    else:
        method = "exact" if len(ties) == n else "permutation"
        doubled = np.rint(2.0 * ranks).astype(np.int64)  # midranks are halves: twice them are integers
        pmf = _signed_rank_null(doubled)
        observed = int(round(2.0 * r_plus))
        p_value = min(1.0, 2.0 * min(float(pmf[:observed + 1].sum()), float(pmf[observed:].sum())))
    return WilcoxonResult(
        statistic=min(r_plus, r_minus),
        p_value=p_value,
        n_units=len(a),
        n_nonzero=int(np.count_nonzero(diff)),
        mean_delta=float(diff.mean()),
        unit=unit,
        min_p=min(1.0, math.ldexp(1.0, 1 - int(np.count_nonzero(diff)))),  # 2 / 2**n, no overflow
        method=method,
    )


def _midranks(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(1-based average ranks of ``x``, shape (n,); the sizes of its groups of equal values)."""
    order = np.argsort(x, kind="mergesort")
    _, first, counts = np.unique(x[order], return_index=True, return_counts=True)
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return ranks, counts


def _signed_rank_null(doubled: NDArray[np.int64]) -> NDArray[np.float64]:
    """The exact null distribution of twice the signed-rank sum: P(2 T+ = s) for s = 0 ...
    sum(doubled), over the 2**n equally likely sign vectors of units whose doubled (mid)ranks
    are ``doubled`` (convolution, one unit at a time: O(n * sum))."""
    pmf = np.zeros(int(doubled.sum()) + 1)
    pmf[0], top = 1.0, 0
    for r in doubled.tolist():
        shifted = np.zeros_like(pmf)
        shifted[r:top + r + 1] = pmf[:top + 1]
        pmf = 0.5 * (pmf + shifted)
        top += r
    return pmf


def holm(p_values: ArrayLike, alpha: float = 0.05) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Holm's step-down adjustment of m p-values read together (family-wise error alpha).

    Args:
        p_values: shape (m,), p-values in [0, 1].
        alpha: the family-wise error rate in (0, 1).

    Returns:
        (adjusted p-values, shape (m,), in the input order; rejected, shape (m,) bool:
        adjusted p <= alpha). The adjusted value of the i-th smallest p is
        ``max_{j <= i} min(1, (m - j + 1) * p_(j))``.

    Raises:
        ValueError: not 1-D, a value outside [0, 1] or NaN, or alpha outside (0, 1).

    Source: Holm, S. (1979), "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6(2), 65-70.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be 1-D, got shape {p.shape}")
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("p-values must lie in [0, 1]")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped) if m else stepped
    return adjusted, adjusted <= alpha
