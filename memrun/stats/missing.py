"""Errored items that fall on one side, bounded instead of dropped.

An item that errored in one arm only has no paired delta. Dropping it is fair while
errors strike at random; when they fall on the items that arm would have got wrong, the
paired mean of the rest is biased toward that arm (``bench/bench_gate_error.py``: errors
just under the 5% gap default, all on items B got wrong, passed 9.7% of null
comparisons). memrun bounds the mean over the paired *and* the one-sided errored items
instead (Horowitz & Manski 2000, "Nonparametric analysis of randomized experiments with
missing covariate and outcome data", JASA 95, 77-84; Manski 2003, ch. 1): each errored
item's missing score is set to the worst case for the treatment for the lower bound
(B's missing score 0, A's missing score 1: scores lie in [0, 1]) and to the best case
for the upper bound. With n paired items of interval [low, high] and k one-sided
errored items whose worst- and best-case deltas sum to W and U,

    low' = (n * low + W) / (n + k),   high' = (n * high + U) / (n + k),

the paired interval's bounds carried to the mean over n + k items: PASS must hold
whatever the errored items would have scored. Items that errored in both arms say
nothing about either and stay out (they are counted). Only the errored items' sampling
noise is left out of the bound (they are at most ``--max-error-share`` of the items).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class ErrorBound:
    """One-sided errored items: ``k_a`` errored in A only (B scored), ``k_b`` in B only;
    ``worst``/``best`` the sums of their worst- and best-case deltas for B (fractions)."""

    k_a: int = 0
    k_b: int = 0
    worst: float = 0.0
    best: float = 0.0

    @property
    def k(self) -> int:
        """One-sided errored items."""
        return self.k_a + self.k_b

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``k`` as a JSON-ready dict."""
        return {**asdict(self), "k": self.k}


def one_sided_errors(a_score_when_b_errored: ArrayLike, b_score_when_a_errored: ArrayLike,
                     low_score: float = 0.0, high_score: float = 1.0) -> ErrorBound:
    """The :class:`ErrorBound` of the one-sided errored items.

    Args:
        a_score_when_b_errored: shape (k_b,), A's scores on the items only B errored on.
        b_score_when_a_errored: shape (k_a,), B's scores on the items only A errored on.
        low_score, high_score: the metric's range (recall, accuracy, MRR, nDCG: [0, 1]).

    Returns:
        worst = sum(low - a) + sum(b - high), best = sum(high - a) + sum(b - low).
    """
    a = np.asarray(a_score_when_b_errored, dtype=np.float64)
    b = np.asarray(b_score_when_a_errored, dtype=np.float64)
    worst = float((low_score - a).sum() + (b - high_score).sum())
    best = float((high_score - a).sum() + (b - low_score).sum())
    return ErrorBound(k_a=len(b), k_b=len(a), worst=worst, best=best)


def bounded(low: float, high: float, n: int, bound: ErrorBound) -> tuple[float, float]:
    """(low', high'): a paired interval over ``n`` items carried to the n + k items with the
    one-sided errored items at their worst / best case (module docstring)."""
    if bound.k == 0:
        return low, high
    total = n + bound.k
    return (n * low + bound.worst) / total, (n * high + bound.best) / total
