"""Paired, clustered percentile bootstrap of a mean per-item delta.

Each item has a paired delta (B minus A, in the metric's unit) and an optional cluster
key; the data reduce to one ``(sum, size)`` pair per cluster. A resample draws C of the
C clusters with replacement and takes ``sum(drawn sums) / sum(drawn sizes)``, the mean
over every item of the drawn clusters (cluster bootstrap: Davison & Hinkley 1997,
sec. 3.8; Field & Welsh 2007). The interval is the percentile interval of Efron &
Tibshirani (1993, sec. 13.3): the ``ceil(B*alpha)``-th and ``ceil(B*(1-alpha))``-th
smallest of the B resampled means, alpha = (1 - confidence) / 2, i.e. numpy's
``method="inverted_cdf"``; a bound is always a mean some resample produced.

Two draw schemes, same distribution, neither holding a resamples x items matrix:

``index``: cluster indices in exactly the sequence ``random.Random(seed).randrange(C)``
    (equivalently ``.choice(clusters)``) yields, C per resample, clusters numbered in
    order of first appearance; the Mersenne Twister runs in numpy and the randrange
    rejection step is vectorised, ``BLOCK`` indices at a time. About 15-20 ns per
    draw, resamples x C draws. This reproduces the reference interval table.
``types``: clusters with equal ``(sum, size)`` are exchangeable, so only how often each
    type is drawn matters: counts ~ Multinomial(C, m_k / C) over the K types of
    multiplicity m_k, the same law as drawing clusters one by one. About 110 ns per
    type, resamples x K draws.

``index`` is used while resamples x C <= ``INDEX_DRAW_BUDGET``; above it ``types`` when
C >= ``TYPE_RATIO`` x K, else ``index``. ``BootstrapResult.draw`` records the choice.

Stratified resampling (``strata``): clusters are drawn with replacement *within* each
stratum, C_s of the C_s clusters of stratum s, so every resample keeps each stratum's
cluster count (Davison & Hinkley 1997, sec. 3.2.2, "stratified sampling"). Use it when
a column is a design stratum rather than a source of correlation: LongMemEval's
question types, whose questions each have their own haystack. Strata are drawn one
after the other, in order of first appearance, each by the rule above; with a single
stratum the draws are exactly the unstratified ones. A cluster must lie in one stratum.

``BootstrapResult.p_value`` is the two-sided percentile-bootstrap p-value of "no
difference", ``min(1, 2 * min(#{m* < 0} + Z/2, #{m* > 0} + Z/2) / B)`` over the B
resampled means m*, where Z = #{m* == 0} resamples exactly at zero count half on each
side (the mid-p convention; Efron & Tibshirani 1993, sec. 15.4, the achieved
significance level of the percentile method); it is below 1 - confidence about when the
interval excludes 0.
Holm's procedure over per-category intervals reads it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 7
DEFAULT_CONFIDENCE = 0.95

INDEX_DRAW_BUDGET = 1 << 25  # index draws whenever resamples x clusters <= this (~0.5 s)
TYPE_RATIO = 8  # above the budget, types when clusters >= TYPE_RATIO x types
BLOCK = 1 << 18  # most cluster indices (or type counts) in memory at once
# 2^18: a block's arrays (~8 MiB) are reused from the heap; at 2^22 each block's ~100 MiB was mapped
# afresh and page-faulted in, which made a process's first bootstrap 2-3x its later ones (a run's
# summary makes one per category) and no later one faster. Draws do not depend on the block size.

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class BootstrapResult:
    """A paired bootstrap interval: observed ``mean`` delta and percentile bounds
    ``low``/``high``, all in the deltas' unit (fractions for labels, never percentage
    points; ``line`` scales for display), with the settings that produced it. ``draw``
    names the draw scheme used, ``"index"`` or ``"types"`` (module docstring; with strata,
    the schemes of the strata joined by ``+`` when they differ). ``p_value`` is the
    two-sided bootstrap p-value of a zero delta, ``n_strata`` the strata resampled within."""

    mean: float
    low: float
    high: float
    n_items: int
    n_clusters: int
    resamples: int
    seed: int
    confidence: float
    draw: str = "index"
    p_value: float = 1.0
    n_strata: int = 1

    def line(self, unit: str = "pp", scale: float = 100.0, digits: int = 1) -> str:
        """Render ``mean [low, high]`` scaled by ``scale``, e.g. ``+6.7 pp [-1.7, +16.7]``.

        A value that rounds to zero is shown as ``+0.0``, never ``-0.0``.
        """
        return format_interval(self.mean, self.low, self.high, unit=unit, scale=scale, digits=digits)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def format_interval(
    mean: float, low: float, high: float, *, unit: str = "pp", scale: float = 100.0,
    digits: int = 1,
) -> str:
    """``mean [low, high]`` times ``scale`` with signs, e.g. ``+6.7 pp [-1.7, +16.7]``.

    Inputs in fractions; a value that rounds to zero shows as ``+0.0``, never ``-0.0``.
    """

    def signed(value: float) -> str:
        rounded = round(value * scale, digits)
        return f"{(rounded if rounded != 0 else 0.0):+.{digits}f}"

    suffix = f" {unit}" if unit else ""
    return f"{signed(mean)}{suffix} [{signed(low)}, {signed(high)}]"


def paired_bootstrap(
    deltas: ArrayLike,
    clusters: ArrayLike | Iterable[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    strata: ArrayLike | Iterable[Hashable] | None = None,
) -> BootstrapResult:
    """Percentile interval of the mean paired delta under a cluster bootstrap.

    Args:
        deltas: 1-D, shape (n,), per-item B-minus-A deltas in the metric's unit
            (+1/0/-1 for labels, reciprocal-rank differences for MRR).
        clusters: None (every item is its own cluster) or shape (n,) hashable keys;
            items sharing a key are resampled together.
        resamples: number of bootstrap resamples B (>= 1).
        seed: non-negative int; same data and settings give the same result.
        confidence: two-sided level in (0, 1); 0.95 reads the 2.5th/97.5th percentiles.
        strata: None, or shape (n,) hashable keys: clusters are resampled within each
            stratum (module docstring); every cluster must lie in one stratum.

    Returns:
        BootstrapResult in the deltas' unit (fractions, not percentage points).

    Raises:
        ValueError: empty or non-1-D deltas, non-finite (NaN/inf) deltas, clusters or
            strata of another length, a cluster in two strata, or an out-of-range setting.
        TypeError: an unhashable cluster key.

    Method: cluster bootstrap (Davison & Hinkley 1997, sec. 3.8) with the percentile
    interval of Efron & Tibshirani (1993, sec. 13.3); draw schemes in the module
    docstring.
    """
    values = _as_deltas(deltas)
    _check_settings(resamples, seed, confidence)
    sums, sizes, inverse = _cluster_totals(values, clusters)
    gen = np.random.Generator(_python_mt(seed))
    totals, weights = np.zeros(resamples), np.zeros(resamples)
    draws = []
    groups = [np.arange(len(sums))] if strata is None else _strata_members(strata, inverse, len(values))
    for members in groups:
        draw, t, w = _resample_totals(sums[members], sizes[members], resamples, gen)
        totals += t
        weights += w
        draws.append(draw)
    means = totals / weights
    low, high = _percentile_bounds(means, confidence)
    return BootstrapResult(
        mean=float(values.mean()), low=low, high=high, n_items=len(values),
        n_clusters=len(sums), resamples=int(resamples), seed=int(seed),
        confidence=float(confidence), draw="+".join(dict.fromkeys(draws)),
        p_value=_p_value(means), n_strata=len(groups),
    )


def _resample_totals(
    sums: FloatArray, sizes: FloatArray, resamples: int, gen: np.random.Generator
) -> tuple[str, FloatArray, FloatArray]:
    """(draw scheme, per-resample delta totals, per-resample item counts) for one
    stratum's clusters, by the rule in the module docstring."""
    n_clusters = len(sums)
    types = _types(sums, sizes) if resamples * n_clusters > INDEX_DRAW_BUDGET else None
    if types is not None and n_clusters >= TYPE_RATIO * len(types[0]):
        return "types", *_totals_by_types(*types, resamples, gen)
    return "index", *_totals_by_index(sums, sizes, resamples, gen)


def _strata_members(
    strata: ArrayLike | Iterable[Hashable], inverse: NDArray[np.intp], n: int
) -> list[NDArray[np.intp]]:
    """Cluster numbers of each stratum, strata in order of first appearance.

    Raises ValueError when ``strata`` has another length than the deltas or a cluster
    holds items of two strata.
    """
    keys = _key_sequence("strata", strata)
    if len(keys) != n:
        raise ValueError(f"strata has {len(keys)} keys but deltas has {n} items")
    codes = _first_appearance_codes(keys)
    n_clusters = int(inverse.max()) + 1
    of_cluster = np.full(n_clusters, -1, dtype=np.intp)
    of_cluster[inverse] = codes
    if not np.array_equal(of_cluster[inverse], codes):
        bad = int(np.flatnonzero(of_cluster[inverse] != codes)[0])
        raise ValueError(f"item {bad}'s cluster also holds items of another stratum; "
                         "clusters must lie within one stratum")
    order = np.argsort(of_cluster, kind="stable")
    bounds = np.searchsorted(of_cluster[order], np.arange(int(codes.max()) + 2))
    return [order[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


def _p_value(means: FloatArray) -> float:
    """Two-sided percentile-bootstrap p-value of a zero delta (module docstring)."""
    b = len(means)
    zero = int((means == 0).sum())
    below, above = int((means < 0).sum()) + zero / 2, int((means > 0).sum()) + zero / 2
    return min(1.0, 2.0 * min(below, above) / b)


def _as_deltas(deltas: ArrayLike) -> FloatArray:
    values = np.asarray(deltas, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"deltas must be 1-D, got shape {values.shape}")
    if values.size == 0:
        raise ValueError("deltas is empty: there is nothing to bootstrap")
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(
            f"deltas contain {int(bad.sum())} NaN/inf value(s), first at index "
            f"{int(np.argmax(bad))}; drop or fix those items before bootstrapping"
        )
    return values


def _check_settings(resamples: int, seed: int, confidence: float) -> None:
    def is_int(x: object) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    if not is_int(resamples) or resamples < 1:
        raise ValueError(f"resamples must be a positive int, got {resamples!r}")
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _key_sequence(name: str, keys: ArrayLike | Iterable[Hashable]) -> NDArray[Any] | list[Any]:
    """``keys`` (one per item) as an array, kept, or a list. Raises TypeError for a scalar
    (as ``list()`` of it would)."""
    if isinstance(keys, np.ndarray):
        return keys
    if not isinstance(keys, Iterable):
        raise TypeError(f"{name}: expected one key per item, got {type(keys).__name__}")
    return list(keys)


def _first_appearance_codes(keys: Any) -> NDArray[np.intp]:
    """Integer codes 0..G-1 of hashable keys, numbered in order of first appearance.

    Raises TypeError for an unhashable key.
    """
    if isinstance(keys, np.ndarray) and keys.ndim == 1 and keys.dtype.kind in "biufUS":
        # Sort-based grouping (faster than a dict for numeric and string arrays),
        # then renumber the groups in order of first appearance.
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), dtype=np.intp)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        return rank[inverse.ravel()]
    ids: dict[Hashable, int] = {}
    listed = keys.tolist() if isinstance(keys, np.ndarray) else keys
    try:
        return np.fromiter((ids.setdefault(k, len(ids)) for k in listed), np.intp, len(listed))
    except TypeError as exc:
        raise TypeError(f"cluster keys must be hashable: {exc}") from None


def _cluster_totals(
    values: FloatArray, clusters: ArrayLike | Iterable[Hashable] | None
) -> tuple[FloatArray, FloatArray, NDArray[np.intp]]:
    """Per-cluster delta sums and sizes, clusters in order of first appearance, and
    each item's cluster number."""
    n = len(values)
    if clusters is None:
        return values, np.ones(n), np.arange(n)
    keys = _key_sequence("clusters", clusters)
    if len(keys) != n:
        raise ValueError(f"clusters has {len(keys)} keys but deltas has {n} items")
    inverse = _first_appearance_codes(keys)
    n_clusters = int(inverse.max()) + 1 if n else 0
    sums = np.asarray(np.bincount(inverse, weights=values, minlength=n_clusters), dtype=np.float64)
    sizes = np.bincount(inverse, minlength=n_clusters).astype(np.float64)
    return sums, sizes, inverse


def _python_mt(seed: int) -> np.random.MT19937:
    """numpy's MT19937 in the state ``random.Random(seed)`` starts from."""
    _, internal, _ = random.Random(int(seed)).getstate()
    bitgen = np.random.MT19937()
    bitgen.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.asarray(internal[:-1], dtype=np.uint32), "pos": internal[-1]},
    }
    return bitgen


class _RandBelow:
    """Integers uniform on [0, n), the same sequence ``random.Random.randrange(n)``
    gives from the same Mersenne Twister state: each 32-bit word's top
    ``n.bit_length()`` bits, words that land at or above n rejected."""

    def __init__(self, gen: np.random.Generator, n: int) -> None:
        if not 1 <= n < 2**32:
            raise ValueError(f"cannot draw below {n}: need 1 <= n < 2**32")
        self._gen = gen
        self._n = n
        self._shift = np.uint32(32 - n.bit_length())
        self._accept = n / 2 ** n.bit_length()
        self._spare = np.empty(0, dtype=np.uint32)

    def take(self, count: int) -> NDArray[np.intp]:
        parts = [self._spare]
        have = len(self._spare)
        while have < count:
            size = int((count - have) / self._accept * 1.02) + 64
            words = self._gen.integers(0, 2**32, size=size, dtype=np.uint32)
            words = np.right_shift(words, self._shift, dtype=np.uint32)
            kept = np.compress(words < self._n, words)
            parts.append(kept)
            have += len(kept)
        drawn = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._spare = drawn[count:].copy()
        return drawn[:count].astype(np.intp)


def _totals_by_index(
    sums: FloatArray, sizes: FloatArray, resamples: int, gen: np.random.Generator,
    block: int = BLOCK,
) -> tuple[FloatArray, FloatArray]:
    """Per-resample delta totals and item counts from cluster-index draws, at most
    ``block`` indices at a time (whole resamples per block, or one resample in pieces
    when C > block)."""
    n_clusters = len(sums)
    stream = _RandBelow(gen, n_clusters)
    equal = bool(sizes.min() == sizes.max())  # then every resample has n_clusters * size items
    totals = np.zeros(resamples)
    weights = np.full(resamples, 0.0 if not equal else float(sizes[0]) * n_clusters)
    rows, piece = max(1, block // n_clusters), min(block, n_clusters)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        for done in range(0, n_clusters, piece):
            width = min(piece, n_clusters - done)
            idx = stream.take((stop - start) * width).reshape(stop - start, width)
            totals[start:stop] += np.take(sums, idx).sum(axis=1)
            if not equal:
                weights[start:stop] += np.take(sizes, idx).sum(axis=1)
    return totals, weights


def _types(sums: FloatArray, sizes: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.intp]]:
    """Distinct (sum, size) pairs, sorted, with how many clusters share each."""
    order = np.lexsort((sizes, sums))
    s, z = sums[order], sizes[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = (s[1:] != s[:-1]) | (z[1:] != z[:-1])
    starts = np.flatnonzero(first)
    return s[starts], z[starts], np.diff(np.append(starts, len(s)))


def _totals_by_types(
    type_sums: FloatArray, type_sizes: FloatArray, multiplicity: NDArray[np.intp],
    resamples: int, gen: np.random.Generator, block: int = BLOCK,
) -> tuple[FloatArray, FloatArray]:
    """Per-resample delta totals and item counts from Multinomial(C, multiplicity / C)
    counts over the types that ``_types`` returns, at most ``block`` counts at a time."""
    n_clusters = int(multiplicity.sum())
    p = multiplicity / n_clusters
    per = max(1, block // len(type_sums))
    totals, weights = np.empty(resamples), np.empty(resamples)
    for start in range(0, resamples, per):
        stop = min(start + per, resamples)
        counts = gen.multinomial(n_clusters, p, size=stop - start).astype(np.float64)
        totals[start:stop] = counts @ type_sums
        weights[start:stop] = counts @ type_sizes
    return totals, weights


def _percentile_bounds(means: FloatArray, confidence: float) -> tuple[float, float]:
    """The ceil(B*alpha)-th and ceil(B*(1-alpha))-th smallest values (1-based).

    A small tolerance keeps float noise in B*alpha (e.g. 250.0000000002) from
    moving a bound by one order statistic.
    """
    b = len(means)
    alpha = (1.0 - confidence) / 2.0
    lo_rank = min(b, max(1, math.ceil(b * alpha - 1e-9)))
    hi_rank = min(b, max(1, math.ceil(b * (1.0 - alpha) - 1e-9)))
    picked = np.partition(means, [lo_rank - 1, hi_rank - 1])
    return float(picked[lo_rank - 1]), float(picked[hi_rank - 1])
