"""The power a comparison had: the minimum detectable effect (MDE) at 80% power and how
much more data an effect of interest would need.

For the gate's interval, mean delta +/- c * SE (c the deciding critical value: the t
quantile on the CR2 interval's Bell-McCaffrey degrees of freedom K, or the normal 1.96
for the percentile bootstrap), a true effect delta passes with probability about
F(delta / SE - c), F the t distribution on K degrees of freedom (normal for the
bootstrap). Setting it to the power 1 - beta:

    MDE = (c + t_{K, 1 - beta}) * SE,       t_{inf, 0.8} = z_{0.8} = 0.8416,

the textbook multiplier for a two-sided test at level alpha with power 1 - beta (Bloom
1995, "Minimum detectable effects", Evaluation Review 19(5), eq. 1; Cohen 1988, ch. 2). SE is
read from the deciding interval (half-width / c), so it carries this design's size,
observed discordance and between-cluster variance. SE falls as 1 / sqrt(clusters) when
clusters of the same kind are added (or items, without clusters), so an effect delta
needs about

    factor = (MDE / delta)**2

times the clusters (items) this comparison had; with few clusters the critical value
also falls as clusters are added, so the factor is an upper bound. Checked against
simulation in tests/stats/test_power.py: the power predicted from each run's own SE
matches the simulated pass rate within a few points. SE is the one the data show: an
effect that also raises discordance (as real ones do) has a larger SE than a null run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy

if TYPE_CHECKING:
    from scipy import special as scipy_special
else:
    scipy_special = lazy("scipy.special")

POWER = 0.8


@dataclass(frozen=True)
class Power:
    """``mde``: the smallest true |delta| (fractions) passing with probability ``power``;
    ``se`` and ``crit`` the deciding interval's standard error and critical value;
    ``effect`` an effect of interest (fractions) and ``factor`` the multiple of the
    current clusters (``units``: ``"clusters"`` or ``"items"``, ``n_units`` of them) it
    would need, ``needed`` that many units (rounded up)."""

    mde: float
    se: float
    crit: float
    power: float
    effect: float
    factor: float
    units: str
    n_units: int
    needed: int

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def minimum_detectable_effect(se: float, crit: float, power: float = POWER, df: float | None = None) -> float:
    """(crit + t_{df, power}) * se: the MDE in the unit of ``se`` (module docstring);
    ``df`` None reads the normal quantile.

    Raises ValueError for a negative se, a non-finite crit or a power outside (0, 1).
    """
    if se < 0 or not math.isfinite(crit) or not 0 < power < 1:
        raise ValueError(f"minimum_detectable_effect needs se >= 0, a finite crit and 0 < power < 1, "
                         f"got se={se}, crit={crit}, power={power}")
    return (crit + _quantile(power, df)) * se


def power_at(effect: float, se: float, crit: float, df: float | None = None) -> float:
    """Probability that a true ``effect`` passes an interval of standard error ``se`` read
    with critical value ``crit`` (module docstring)."""
    shift = effect / se - crit
    return float(scipy_special.ndtr(shift) if df is None else scipy_special.stdtr(df, shift))


def _quantile(p: float, df: float | None) -> float:
    if df is None:
        return NormalDist().inv_cdf(p)

    return float(scipy_special.stdtrit(df, p))


def power_of(low: float, high: float, crit: float, *, effect: float, units: str, n_units: int,
             power: float = POWER, df: float | None = None) -> Power | None:
    """The :class:`Power` of an interval [low, high] read with critical value ``crit``
    (``df``: its t degrees of freedom, None for a normal-based interval); None when the
    interval has no usable width (degenerate, infinite)."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(crit)) or high <= low or crit <= 0:
        return None
    se = (high - low) / (2 * crit)
    mde = minimum_detectable_effect(se, crit, power, df)
    factor = (mde / effect) ** 2 if effect > 0 else math.inf
    needed = math.ceil(n_units * factor) if math.isfinite(factor) else 0
    return Power(mde=mde, se=se, crit=crit, power=power, effect=effect, factor=factor, units=units,
                 n_units=n_units, needed=needed)
