"""Agreement between two raters (e.g. a judge and a second judge) on the same items."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence


def _paired(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> tuple[list[Hashable], list[Hashable]]:
    a, b = list(labels_a), list(labels_b)
    if len(a) != len(b):
        raise ValueError(f"labels_a has {len(a)} items but labels_b has {len(b)}")
    if not a:
        raise ValueError("agreement needs at least one item rated by both raters")
    return a, b


def agreement(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float:
    """Observed agreement: the fraction of items both raters labelled the same.

    Args:
        labels_a, labels_b: length n (>= 1), one hashable label per item, paired by
            position.

    Returns:
        A fraction in [0, 1].

    Raises:
        ValueError: lengths differ or n == 0.
    """
    a, b = _paired(labels_a, labels_b)
    return sum(x == y for x, y in zip(a, b)) / len(a)


def cohen_kappa(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float:
    """Cohen's kappa: agreement corrected for chance.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and
    ``p_e = sum_k p_a(k) * p_b(k)`` the agreement expected from each rater's own
    label frequencies (unweighted; the same definition as scikit-learn's
    ``cohen_kappa_score`` without weights).

    Args:
        labels_a, labels_b: length n (>= 1), one hashable label per item.

    Returns:
        kappa in [-1, 1]; NaN when p_e == 1 (both raters used one and the same label
        for every item, so chance agreement is total and kappa is undefined).

    Raises:
        ValueError: lengths differ or n == 0.

    Source: Cohen (1960), "A coefficient of agreement for nominal scales".
    """
    a, b = _paired(labels_a, labels_b)
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    p_e = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    if p_e == 1.0:
        return math.nan
    return (p_o - p_e) / (1.0 - p_e)
