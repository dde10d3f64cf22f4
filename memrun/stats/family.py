"""k arms against one baseline: family-wise control of a false PASS.

Each arm's own gate holds its false-pass rate near 2.5% (one-sided); read k of them at
once and some arm passes by chance far more often (``bench/bench_gate_error.py``: 5 / 10
/ 20 null arms against one baseline, at least one PASS in 9.0 / 16.0 / 22.2% of sweeps
before this module). memrun reads a family of arms with Holm's step-down procedure (Holm
1979) over the arms' one-sided gate p-values (:attr:`memrun.stats.gate.GateInterval.p_pass`)
at family-wise level ``alpha`` (2.5%, the single gate's one-sided level): sorted p_(1) <= ...
<= p_(k), arm (i) is a winner when p_(j) <= alpha / (k - j + 1) for every j <= i, and its
own gate passed. Holm holds the family-wise rate whatever the correlation between the arms
(they share the baseline); a max-t joint bootstrap would be more powerful for strongly
correlated arms and is left for later. A single pairwise compare is a family of one:
unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memrun.stats.paired_tests import holm

FAMILY_ALPHA = 0.025
"""Family-wise one-sided level: the single gate's."""
METHOD = "holm"


def family_verdicts(p_pass: Sequence[float], own_pass: Sequence[bool], alpha: float = FAMILY_ALPHA) -> list[bool]:
    """Which arms of a family pass: their own gate passed and Holm rejects their null.

    Args:
        p_pass: shape (k,), each arm's one-sided gate p-value of "no better than the threshold".
        own_pass: shape (k,), whether each arm's own gate said PASS.
        alpha: family-wise level in (0, 1).

    Returns:
        k booleans, in the input order.

    Raises:
        ValueError: lengths differ, or ``holm``'s (p-values outside [0, 1], alpha outside (0, 1)).
    """
    if len(p_pass) != len(own_pass):
        raise ValueError(f"{len(p_pass)} p-values but {len(own_pass)} gate outcomes")
    if not len(p_pass):
        return []
    _, reject = holm(np.asarray(p_pass, dtype=np.float64), alpha=alpha)
    return [bool(r and o) for r, o in zip(reject, own_pass)]


def holm_adjusted(p_pass: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values of the family, in the input order (compare them with
    :data:`FAMILY_ALPHA`)."""
    if not len(p_pass):
        return []
    adjusted, _ = holm(np.asarray(p_pass, dtype=np.float64), alpha=FAMILY_ALPHA)
    return [float(x) for x in adjusted]
