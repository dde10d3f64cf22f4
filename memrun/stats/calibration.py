"""Correcting a paired delta for an imperfect judge.

A judge with true-positive rate TPR (known-correct answers judged correct) and
false-positive rate FPR (known-wrong answers judged correct) reports accuracy
``TPR * p + FPR * (1 - p)`` for true accuracy p, so a paired delta of true
accuracies shrinks by Youden's ``J = TPR - FPR`` (Youden 1950). The corrected delta
is ``delta / J``.

Interval (delta method, e.g. Casella & Berger 2002, sec. 5.5.4). The bootstrap delta
and J are estimated on independent samples, so to first order

    Var(delta / J) = Var(delta) / J**2 + delta**2 * Var(J) / J**4,
    Var(J) = TPR (1 - TPR) / n_pos + FPR (1 - FPR) / n_neg   (two binomial rates).

Reading each bootstrap half-width h (``mean - low`` below, ``high - mean`` above) as
z * sd(delta), each side of the corrected interval is

    delta / J -/+ sqrt( (h / J)**2 + (z * |delta| * sd(J) / J**2)**2 ),

with z the critical value of the interval given: the normal quantile of its confidence
(1.96 at 95%) for a bootstrap interval, the t quantile on its degrees of freedom for a
CR2 interval, so that both terms are read at the same level. The skew of
the bootstrap interval is kept; the calibration term widens both sides equally. At
delta = 0 the calibration term vanishes (a first-order property of the method).

Source: the memrun benchmark methodology, "Judge calibration".
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from memrun.stats.bootstrap import BootstrapResult, format_interval


@dataclass(frozen=True)
class JudgeCalibration:
    """A judge's rates on calibration probes: ``tpr`` (fraction of ``n_pos``
    known-correct probes judged correct) and ``fpr`` (fraction of ``n_neg``
    known-wrong probes judged correct). Raises ValueError on rates outside [0, 1]
    or counts below 1."""

    tpr: float
    fpr: float
    n_pos: int
    n_neg: int

    def __post_init__(self) -> None:
        for name in ("tpr", "fpr"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("n_pos", "n_neg"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))

    @property
    def youden_j(self) -> float:
        """Youden's J = TPR - FPR, in [-1, 1]; <= 0 means the judge carries no signal."""
        return self.tpr - self.fpr

    @property
    def j_variance(self) -> float:
        """Var(J) = TPR(1-TPR)/n_pos + FPR(1-FPR)/n_neg (binomial sampling of the probes)."""
        return self.tpr * (1 - self.tpr) / self.n_pos + self.fpr * (1 - self.fpr) / self.n_neg

    def to_dict(self) -> dict[str, Any]:
        """``{"tpr", "fpr", "n_pos", "n_neg"}``, JSON-ready."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeCalibration:
        """Build from a mapping with keys tpr, fpr, n_pos, n_neg (other keys, e.g. a
        judge name, are ignored).

        Raises:
            ValueError: a missing key, or a value ``__post_init__`` rejects.
        """
        missing = [k for k in ("tpr", "fpr", "n_pos", "n_neg") if k not in data]
        if missing:
            raise ValueError(f"judge calibration is missing {missing}")
        return cls(tpr=data["tpr"], fpr=data["fpr"], n_pos=data["n_pos"], n_neg=data["n_neg"])


@dataclass(frozen=True)
class CalibratedResult:
    """A judge-corrected interval in fractions: ``mean`` = raw mean / J, ``low`` and
    ``high`` widened as in the module docstring. ``corrected`` is False (and
    mean/low/high equal the raw ones) when J <= 0; ``warning`` then says why, and
    also flags a J whose own interval reaches zero."""

    mean: float
    low: float
    high: float
    j: float
    j_se: float
    corrected: bool
    warning: str | None
    raw: BootstrapResult
    calibration: JudgeCalibration

    def line(self, unit: str = "pp", scale: float = 100.0, digits: int = 1) -> str:
        """Render like ``BootstrapResult.line``, e.g. ``+8.1 pp [-2.3, +20.6]``."""
        return format_interval(self.mean, self.low, self.high, unit=unit, scale=scale, digits=digits)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (raw and calibration nested)."""
        return asdict(self)


def correct_for_judge(result: BootstrapResult, calibration: JudgeCalibration, *,
                      crit: float | None = None) -> CalibratedResult:
    """Divide a paired delta by the judge's Youden J and widen its interval.

    Args:
        result: bootstrap interval of the judged delta, in fractions.
        calibration: the judge's TPR/FPR on its calibration probes.
        crit: the critical value of the interval given (t for a CR2 interval); None:
            the normal quantile of ``result.confidence``. Both terms use it.

    Returns:
        CalibratedResult in fractions. With J <= 0 nothing is corrected: mean, low
        and high are the inputs', ``corrected`` is False and ``warning`` explains.

    Raises:
        Nothing for J <= 0 (by design); ValueError only through invalid inputs
        already rejected by ``JudgeCalibration``.

    Method: delta method for a ratio of independent estimates (module docstring).
    """
    j = calibration.youden_j
    j_se = math.sqrt(calibration.j_variance)
    warning: str | None
    if j <= 0:
        warning = (f"judge has Youden's J = {j:+.3f} <= 0 (TPR {calibration.tpr:.3f}, "
                   f"FPR {calibration.fpr:.3f}): it carries no information; "
                   "the interval is reported uncorrected")
        return CalibratedResult(result.mean, result.low, result.high, j, j_se, False,
                                warning, result, calibration)
    z = crit if crit is not None and math.isfinite(crit) else NormalDist().inv_cdf(0.5 + result.confidence / 2)
    below = max(0.0, result.mean - result.low) / j
    above = max(0.0, result.high - result.mean) / j
    judge_term = z * abs(result.mean) * j_se / j**2
    mean = result.mean / j
    low = mean - math.hypot(below, judge_term)
    high = mean + math.hypot(above, judge_term)
    warning = None
    if j - z * j_se <= 0:
        warning = (f"Youden's J = {j:.3f} is within {z:.2f} standard errors ({j_se:.3f}) "
                   "of zero: the corrected interval is unreliable; calibrate on more probes")
    return CalibratedResult(mean, low, high, j, j_se, True, warning, result, calibration)
