"""The minimum detectable effect (MDE) `memrun compare` and `memrun plan --pilot` print,
and how far the power at it could be from the 80% it promises.

Why. The gate is calibrated at the ICC's 99% upper limit, so its false-pass rate holds
whatever the data's ICC; an MDE cannot be calibrated that way (at the upper limit it would
promise far more than 80% on most designs). It is found at the ICC's estimate, and the
power at it is then only as good as that estimate. With LoCoMo-sized clusters (~150 items)
an ICC of 0.01 already nearly triples the variance of the mean, and 10 clusters pin the ICC
to a 90% interval like [0.01, 0.09]: over that interval the power at one effect runs from
~25% to ~100% (``bench/bench_gate_error.py --power``). The shape of the cluster effects,
which the gate allows to be skewed, is not identified at all. So the MDE is printed with the
range of its power, and called trustworthy only where that range stays within 80 +- 5 pp.

Method. One simulation (:class:`PowerModel`) with the gate's own statistic
(:func:`memrun.stats.calibrated.studentized`) and critical value, on the design check's own
common random numbers (:func:`memrun.stats.calibrated.null_draws`), with the discordance an
effect brings (q = q0 + |mu|) and the base discordance q0 that the observed one implies at
each ICC (:func:`model_parameters`):

1. the MDE (:func:`simulated_mde`): the smallest true delta at which a share ``power`` of the
   simulated comparisons pass, at the ICC's median-unbiased estimate (its 50% limit from the
   ANOVA F ratio) with normal effects, by bisection; each simulated comparison is read with
   the critical value its own design check would give (:func:`crit_curve` at its own ICC
   upper limit) when the calibrated t interval decides, with the normal quantile when the
   percentile bootstrap decides. The power falls as the ICC rises, so with normal effects
   the true power at this MDE is at least 80% for about half of a design's comparisons
   (median-unbiased), not on average: the mean over comparisons can sit well off 80%
   where the ICC is loose. Where the cluster means are skewed the power is a mixture
   (:meth:`PowerModel.design_rate`): with weight w = |their effects' skewness| / 2 (an
   exponential's, the design check's most skewed shape; at most 1; :func:`effect_skewness`)
   the power under that skewed shape at its own median-unbiased ICC. Skewed effects both
   lower the gate's power at one ICC and make the normal-theory F estimate of the ICC
   median-biased low (20-25% at 5-10 clusters), so an MDE read with normal effects alone
   had 62-71% true power on skewed designs; with normal effects the clusters' skewness is
   noise around 0 and the weight small;
2. the spread (:func:`power_spread`): the simulated power at that MDE at the ICC's 5% and 95%
   confidence limits with normal, skewed-down and skewed-up effects (the design check's three
   shapes), on the same draws: a sensitivity analysis of the sample size to its nuisance
   parameter (Julious 2004, "Sample sizes for clinical trials with normal data", Stat Med 23;
   for the ICC, Donner & Klar 2000, ch. 5). The limits invert the simulated one-way ANOVA F
   ratio under normal and skewed effects on the same draws (:func:`icc_limits`): the F
   interval (Searle, Casella & McCulloch 1992, sec. 3.6; Donner 1986) assumes normal effects
   and held the true ICC in 61-79% of pilots with skewed ones for a nominal 90%, so the range
   claimed more than it knew. ``trusted`` when every scenario is within :data:`TOLERANCE`.

No MDE is printed (``status``) where none exists (no effect within the metric's range reaches
80% at the estimated ICC: ``none``) or where the variance of the mean rests on fewer than
:data:`MIN_DF` Bell-McCaffrey degrees of freedom (``refused``: 3 clusters, one cluster
holding most of the items), the same spirit as the gate's ``unresolved``.

Above :data:`memrun.stats.calibrated.SIMULATE_UP_TO` clusters the design check is read from its
Edgeworth expansion and draws nothing; there the MDE is the formula's
(:func:`memrun.stats.power.minimum_detectable_effect`) and its spread comes from the model's
variance at the ICC's limits, SE(icc) / SE(estimate) = sqrt(V(icc) / V(estimate)),
V = sum(n_g**2 tau**2 + n_g q0) (:func:`formula_spread`; the skew of the effects matters as
1 / sqrt(G) there).

Cost: the bisection reads ~15 simulated power rates, the spread 6 more, each a pass over the
check's cached draws (replications x clusters), and the ICC's limits up to 30 passes over
their first :data:`LIMIT_REPLICATIONS`: ~0.1-0.2 s CPU for LoCoMo's 10 clusters, ~0.8 s at
50 clusters.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memrun.stats.bootstrap import _as_deltas, _cluster_totals
from memrun.stats.calibrated import (
    SHAPES,
    DesignCheck,
    anova_f_rows,
    icc_anova,
    null_draws,
    studentized,
    upper_icc_rows,
)
from memrun.stats.power import POWER, power_at, power_of
from memrun.stats.simulation import tau_for_icc

FloatArray = NDArray[np.float64]

POWER_ICC_CONFIDENCE = 0.5
"""The MDE is found at the ICC's median-unbiased estimate (its 50% limit)."""
SPREAD_CONFIDENCE = 0.90
"""Two-sided confidence of the ICC interval over which the power at the MDE is spread."""
TOLERANCE = 0.05
"""The MDE is trusted when its power stays within this of the target in every scenario."""
ICC_GRID = (0.0, 0.01, 0.03, 0.08, 0.2, 0.5)
"""ICC values at which :func:`crit_curve` calibrates."""
MIN_DF = 3.0
"""Below this many Bell-McCaffrey degrees of freedom (fewer than 4 effective clusters: 3
clusters, or one cluster holding most of the items) no MDE is printed: the variance of the
mean rests on so few independent clusters that its 90% interval spans a factor of over 20
(chi-squared on 3 df: 0.35 to 7.8; on 2 df, 0.10 to 5.99)."""
BISECTIONS = 8
"""Bisection steps of :func:`simulated_mde`: 1/256 of a bracket about twice the MDE, ~0.8% of
it, as fine as the simulated power allows (its Monte-Carlo SE at 80% from 4,000
replications, ~0.6 pp, moves the MDE by ~0.7%)."""
EXPONENTIAL_SKEW = 2.0
"""Skewness of the design check's skewed effects (an exponential's): the clusters' own
skewness is read as a share of it (:attr:`PowerModel.skew_weight`)."""
METRIC_RANGE = 0.9
"""The largest simulated true delta (in the simulation's unit, the deltas' scale): beyond
it the clipped model has no room left."""


def crit_curve(draws: Any, sizes: FloatArray, q0: float, delta0: float, alpha: float,
               nominal: float) -> tuple[FloatArray, FloatArray]:
    """(ICC grid, crit_up at each): the critical value the design check would read if the
    ICC's upper limit were each grid value (same scenarios, same draws), so that a
    simulated comparison's own critical value can be read off its own ICC limit."""
    grid = np.asarray(ICC_GRID)
    curve = np.empty(len(grid))
    s, q = draws.moments(q0=q0, icc=0.0, delta=delta0, shape="normal")
    base = float(np.quantile(studentized(s, q, sizes, delta0)[2], 1.0 - alpha, method="higher"))
    for i, icc in enumerate(grid):
        worst = base
        for shape in SHAPES if icc > 0 else ():
            s, q = draws.moments(q0=q0, icc=float(icc), delta=delta0, shape=shape)
            worst = max(worst, float(np.quantile(studentized(s, q, sizes, delta0)[2], 1.0 - alpha, method="higher")))
        curve[i] = max(nominal, worst)
    return grid, np.maximum.accumulate(curve)


ICC_LIMIT_GRID = (0.0, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.45, 0.65, 0.9)
"""ICC values at which :func:`icc_limits` reads the simulated F ratio's quantiles (linear
interpolation between them)."""
LIMIT_SHAPES = ("normal", "skewed_down")
"""The effect shapes :func:`icc_limits` inverts the F ratio under: the ratio sees only the
spread of the cluster effects, and the mirrored shape (``skewed_up``) spreads them the same
way (at a zero threshold exactly: its sums are the mirror image)."""
LIMIT_REPLICATIONS = 1000
"""Replications of the design check's draws read per ICC by :func:`icc_limits` (the 5% and
95% quantiles of 1,000 draws move the limits by a few hundredths of their width)."""


def icc_limits(draws: Any, sizes: FloatArray, q0: float, null: float, f_obs: float,
               confidence: float = SPREAD_CONFIDENCE, shapes: tuple[str, ...] = LIMIT_SHAPES) -> tuple[float, float]:
    """(lower, upper) two-sided ``confidence`` limits of the ICC, in the power model's own
    ICC (the argument of :meth:`PowerModel.rate`), by inverting the simulated one-way ANOVA
    ratio F = MSB / MSW of the observed cluster sums (``f_obs``) on the design's own draws.

    The upper limit is the largest ICC at which ``f_obs`` is not below the F ratio's
    (1 - confidence) / 2 quantile under some shape of :data:`LIMIT_SHAPES`, the lower limit
    the smallest at which it is not above the (1 + confidence) / 2 quantile (a confidence
    set by test inversion, Casella & Berger 2002, sec. 9.2.1, with the effect shape a
    nuisance parameter over which the set is the union, Berger & Boos 1994). Why not the
    F interval of :func:`memrun.stats.calibrated.icc_anova`: it assumes normal cluster
    effects, and the variance of MSB grows with their kurtosis (Var(MSB) / E(MSB)**2 ~
    2 / (G - 1) + kappa / G; an exponential's kappa is 6), so that under skewed effects it
    held the true ICC in 61-79% of 150 pilots of 5-50 LoCoMo-sized clusters for a nominal
    90% (``bench/bench_gate_error.py --icc-coverage``).

    Args:
        draws: the design check's :class:`memrun.stats.simulation.NullDraws` (the first
            :data:`LIMIT_REPLICATIONS` are read).
        sizes: shape (G,), items per cluster (G >= 2, more items than clusters).
        q0: the observed discordance (as :attr:`PowerModel.q0`); null: the simulated true
            delta (the simulation's unit).
        f_obs: the observed F ratio (:func:`memrun.stats.calibrated.anova_f_rows`).
        confidence: two-sided (0: both limits are the median-unbiased ICC of each shape).
        shapes: the effect shapes whose intervals are united.

    Returns:
        (lower, upper): 0 for the lower limit when ``f_obs`` is not above the ratio's upper
        quantile at ICC 0; the grid's last value when a limit lies beyond it.
    """
    tail = (1.0 - confidence) / 2
    cut = draws.first(LIMIT_REPLICATIONS)
    grid = np.asarray(ICC_LIMIT_GRID)
    low, high = grid[-1], 0.0
    for shape in shapes:
        lows, highs = [], []
        for icc in grid:
            base, param = model_parameters(q0, float(icc), shape)
            s, q = cut.moments(q0=base, icc=param, delta=null, shape=shape)
            f = anova_f_rows(s, q, sizes)
            seen = f[~np.isnan(f)]  # +inf (no spread within clusters) is kept: no interpolation across it
            a, b = np.quantile(seen, [tail, 1.0 - tail], method="inverted_cdf") if len(seen) else (0.0, 0.0)
            lows.append(a)
            highs.append(b)
            if a > f_obs:  # the upper limit lies below this ICC: the rest of the grid is not needed
                break
        at = grid[:len(lows)]
        lows_m, highs_m = np.maximum.accumulate(lows), np.maximum.accumulate(highs)
        high = max(high, float(np.interp(f_obs, lows_m, at)) if lows_m[-1] > f_obs else float(grid[-1]))
        low = min(low, 0.0 if f_obs <= highs_m[0] else
                  float(np.interp(f_obs, highs_m, at)) if highs_m[-1] >= f_obs else float(grid[-1]))
    return low, high


MEAN_ABS_EFFECT = {"normal": math.sqrt(2 / math.pi), "skewed_down": 2 / math.e, "skewed_up": 2 / math.e}
"""E|m| / tau of the cluster effect m of each shape: sqrt(2 / pi) for the normal, 2 / e for
tau * (1 - Exponential(1))."""


def model_parameters(observed: float, icc: float, shape: str = "normal") -> tuple[float, float]:
    """(q0, the ``icc`` argument of :meth:`memrun.stats.simulation.NullDraws.moments`) for
    clusters of ``shape`` whose deltas show discordance ``observed`` (D) and ANOVA ICC
    ``icc``: the model's clusters disagree on q0 + |m_g| of their pairs and the ICC of the
    deltas is tau**2 / D whatever the shape, so tau = sqrt(icc D) and q0 = D - E|m|
    (:data:`MEAN_ABS_EFFECT`), at least 0.02; the ``icc`` argument is the one for which
    ``tau_for_icc`` (written for the normal) gives that tau. Reading D itself as q0 would
    count the clusters' spread twice (a larger tau for the same ICC) and understate the
    power by 5-15 pp at ICC 0.05 on LoCoMo-sized clusters."""
    tau = math.sqrt(max(icc, 0.0) * observed)
    q0 = max(0.02, observed - tau * MEAN_ABS_EFFECT[shape])
    return q0, tau**2 / (q0 + tau * MEAN_ABS_EFFECT["normal"]) if tau > 0 else 0.0


class PowerModel:
    """The gate's pass rate on simulated comparisons of one design at a true effect.

    Args:
        deltas, clusters: the comparison's per-item deltas (shape (n,)) and the clustering
            its gate read (shape (n,) keys, or None: items independent).
        check: their design check (a simulated one: ``replications`` > 0).
        null: the gate's threshold in the deltas' unit.
        calibrated: the calibrated t interval decides (each simulated comparison reads the
            critical value its own check would give); else the percentile bootstrap
            decides, read as the normal quantile of the gate's confidence.

    Raises:
        ValueError: a check that was not simulated (``replications`` 0) or refused.
    """

    def __init__(self, deltas: ArrayLike, clusters: ArrayLike | Iterable[Hashable] | None, check: DesignCheck,
                 *, null: float = 0.0, calibrated: bool = True) -> None:
        if not check.replications or not math.isfinite(check.crit_up):
            raise ValueError("PowerModel needs a simulated design check with a finite critical value")
        values = _as_deltas(deltas)
        sums, sizes, inverse = _cluster_totals(values, clusters)
        sumsq = np.bincount(inverse, weights=values**2, minlength=len(sizes)).astype(np.float64)
        self.sizes = sizes
        self.scale = math.sqrt(float((values**2).mean()) / check.discordance) if check.discordance > 0 else 1.0
        self.q0 = min(1.0, max(check.discordance, 0.02))
        self.null = float(np.clip(null / self.scale, -0.9, 0.9))
        self.draws = null_draws(sizes.tobytes(), check.replications, check.seed)
        self.alpha = check.alpha
        if calibrated:
            self.grid, self.curve = crit_curve(self.draws, sizes, self.q0, self.null, check.alpha, check.nominal_crit)
            self.crit = math.nan
        else:
            self.crit = NormalDist().inv_cdf(1.0 - check.alpha)
        self.icc = icc_anova(sums, sumsq, sizes, POWER_ICC_CONFIDENCE)[1]
        identified = len(sizes) >= 2 and sizes.sum() > len(sizes)  # else no within/between split
        f_obs = float(anova_f_rows(sums, sumsq, sizes)) if identified else math.nan
        self.icc_range = (0.0, 0.0) if math.isnan(f_obs) else icc_limits(self.draws, sizes, self.q0, self.null, f_obs)
        skew = effect_skewness(sums / sizes, f_obs)
        self.skew_weight = min(1.0, abs(skew) / EXPONENTIAL_SKEW)
        self.skew_shape = "skewed_down" if skew < 0 else "skewed_up"
        self.skew_icc = icc_limits(self.draws, sizes, self.q0, self.null, f_obs, 0.0, (self.skew_shape,))[1] \
            if self.skew_weight > 0 else self.icc

    def rate(self, effect: float, icc: float | None = None, shape: str = "normal") -> float:
        """Share of simulated comparisons the gate passes at true delta ``null + effect``
        (``effect`` in the simulation's unit: the deltas' divided by :attr:`scale`), at
        ``icc`` (default: the estimate, :attr:`icc`) with cluster effects of ``shape``."""
        q0, param = model_parameters(self.q0, self.icc if icc is None else icc, shape)
        s, q = self.draws.moments(q0=q0, icc=param, delta=self.null + effect, shape=shape)
        _, _, t = studentized(s, q, self.sizes, self.null)
        crit = self.crit if math.isfinite(self.crit) else np.interp(upper_icc_rows(s, q, self.sizes), self.grid,
                                                                     self.curve)
        return float((t > crit).mean())

    def design_rate(self, effect: float) -> float:
        """The power the MDE is found at: :meth:`rate` at the estimated ICC with normal
        effects, mixed with the skewed shape the clusters show at its own median-unbiased
        ICC (:attr:`skew_icc`) in the share :attr:`skew_weight`."""
        w = self.skew_weight
        skewed = self.rate(effect, self.skew_icc, self.skew_shape) if w > 0 else 0.0
        return skewed if w >= 1 else (1.0 - w) * self.rate(effect) + w * skewed


def effect_skewness(means: FloatArray, f_ratio: float) -> float:
    """The skewness of the cluster effects that the cluster means (shape (G,)) show: their
    adjusted Fisher-Pearson skewness G1 = g1 sqrt(G (G - 1)) / (G - 2) (as
    ``scipy.stats.skew(bias=False)``), divided by the share of their variance that is the
    effects', r = 1 - 1 / F (the ANOVA ratio), to the power 1.5 (the items' own noise in a
    cluster mean is symmetric and dilutes the effects' third moment by r**1.5). 0 with
    fewer than 3 clusters, no spread between them, or F <= 1 (no effect variance seen)."""
    g = len(means)
    centred = means - means.mean()
    m2 = float((centred**2).mean())
    if g < 3 or m2 <= 0 or not f_ratio > 1:
        return 0.0
    g1 = float((centred**3).mean()) / m2**1.5 * math.sqrt(g * (g - 1)) / (g - 2)
    return g1 / (1.0 - 1.0 / f_ratio) ** 1.5


def simulated_mde(model: PowerModel, power: float = POWER, start: float | None = None) -> tuple[float, float]:
    """(MDE in the deltas' unit above the threshold, the simulated power at it): the
    smallest true effect at which ``model`` passes a share ``power`` of its comparisons
    (:meth:`PowerModel.design_rate`: at the estimated ICC with normal effects, mixed with the
    skewed shape the clusters show) (bisection to 1/2**:data:`BISECTIONS` of the bracket;
    ``start`` a first guess in the deltas' unit, e.g. the formula's MDE). (inf, power at the
    largest effect) when no effect up to :data:`METRIC_RANGE` reaches ``power``."""
    top = METRIC_RANGE - model.null
    high = min(top, max(2.0 * (start or 0.0) / model.scale, 0.01))
    while (at := model.design_rate(high)) < power:
        if high >= top - 1e-9:
            return math.inf, at
        high = min(top, 2 * high)
    low = 0.0
    for _ in range(BISECTIONS):
        mid = (low + high) / 2
        if (rate := model.design_rate(mid)) < power:
            low = mid
        else:
            high, at = mid, rate
    return high * model.scale, at


def power_spread(model: PowerModel, mde: float) -> tuple[float, float, str]:
    """(lowest, highest simulated power at ``mde`` (deltas' unit), the scenario of the
    lowest) over the ICC's :data:`SPREAD_CONFIDENCE` limits and estimate with the three
    effect shapes of the design check (module docstring)."""
    effect = mde / model.scale
    rates = [(model.rate(effect), f"normal@{model.icc:.3f}")]
    if model.skew_weight > 0:
        rates.append((model.rate(effect, model.skew_icc, model.skew_shape), f"{model.skew_shape}@{model.skew_icc:.3f}"))
    for icc in sorted(set(model.icc_range)):
        rates += [(model.rate(effect, icc, shape), f"{shape}@{icc:.3f}") for shape in SHAPES]
    low = min(rates)
    return low[0], max(r for r, _ in rates), low[1]


def formula_spread(deltas: ArrayLike, clusters: ArrayLike | Iterable[Hashable] | None, mde: float, se: float,
                   crit: float, df: float | None) -> tuple[float, float, tuple[float, float], float]:
    """(lowest, highest power at ``mde``, the ICC's limits, its estimate) for the formula's
    MDE: the SE scaled by the model's variance at the ICC's :data:`SPREAD_CONFIDENCE`
    limits relative to its estimate (module docstring)."""
    values = _as_deltas(deltas)
    sums, sizes, inverse = _cluster_totals(values, clusters)
    sumsq = np.bincount(inverse, weights=values**2, minlength=len(sizes)).astype(np.float64)
    discordance = float(np.count_nonzero(values) / len(values))
    q0 = min(1.0, max(discordance, 0.02))
    tail = (1.0 - SPREAD_CONFIDENCE) / 2
    estimate = icc_anova(sums, sumsq, sizes, POWER_ICC_CONFIDENCE)[1]
    limits = (icc_anova(sums, sumsq, sizes, tail)[1], icc_anova(sums, sumsq, sizes, 1.0 - tail)[1])

    def variance(icc: float) -> float:
        base, param = model_parameters(q0, icc)
        return float((sizes**2 * tau_for_icc(param, base) ** 2 + sizes * base).sum())

    base = variance(estimate)
    powers = [power_at(mde, se * math.sqrt(variance(i) / base), crit, df) for i in limits]
    return min(powers), max(powers), limits, estimate


def minimum_detectable(deltas: ArrayLike, clusters: ArrayLike | Iterable[Hashable] | None,
                       check: DesignCheck | None, *, calibrated: bool, low: float, high: float, crit: float,
                       df: float | None, null: float, effect: float, units: str, n_units: int,
                       power: float = POWER) -> dict[str, Any] | None:
    """What compare and plan print as the comparison's power (one code path; the error-rate
    bench checks exactly this).

    Args:
        deltas, clusters: the per-item deltas and the clustering the gate read.
        check: the gate's design check, or None (not simulated).
        calibrated: the calibrated t interval decided (else the percentile bootstrap).
        low, high, crit, df: the deciding interval (fractions), its critical value and
            t degrees of freedom (None: normal), for the formula.
        null: the gate's threshold; effect: the effect of interest (fractions);
        units, n_units: what the factor counts ("clusters"/"items") and how many.
        power: the target power.

    Returns:
        None when the interval has no usable width; else the :class:`memrun.stats.power.Power`
        fields plus ``method`` ("simulated" or "formula"), ``simulated_power`` (at the MDE,
        the estimate's scenario), ``power_low``/``power_high`` (its spread), ``icc`` and
        ``icc_range`` (estimate and limits), ``worst`` (the scenario of ``power_low``),
        ``trusted`` (the spread within :data:`TOLERANCE` of ``power``) and ``status``:
        ``"trusted"``; ``"loose"`` (an MDE, printed with its spread); ``"none"`` (no effect
        within the metric's range reaches ``power`` at the estimated ICC: ``mde`` and
        ``factor`` None, the spread that of the power at the largest effect); ``"refused"``
        (fewer than :data:`MIN_DF` Bell-McCaffrey degrees of freedom: ``reason`` says why;
        the MDE is not printed, only kept in the JSON).
    """
    result = power_of(low, high, crit, effect=effect, units=units, n_units=n_units, df=df)
    if result is None:
        return None
    out: dict[str, Any] = {**result.to_dict(), "method": "formula", "simulated_power": None, "reason": None}
    if check is not None and check.replications and math.isfinite(check.crit_up):
        model = PowerModel(deltas, clusters, check, null=null, calibrated=calibrated)
        mde, at = simulated_mde(model, power, start=result.mde)
        out.update(method="simulated", simulated_power=at, icc=model.icc, icc_range=list(model.icc_range),
                   skew_weight=model.skew_weight, skew_shape=model.skew_shape, skew_icc=model.skew_icc)
        if not math.isfinite(mde):  # the spread of the power at the largest effect
            lo, hi, worst = power_spread(model, (METRIC_RANGE - model.null) * model.scale)
            out.update(mde=None, power_low=lo, power_high=hi, worst=worst, factor=None, needed=0)
        else:
            lo, hi, worst = power_spread(model, mde)
            factor = (mde / effect) ** 2 if effect > 0 else math.inf
            out.update(mde=mde, power_low=lo, power_high=hi, worst=worst, factor=factor,
                       needed=int(math.ceil(n_units * factor)) if math.isfinite(factor) else 0)
    else:
        lo, hi, limits, icc = formula_spread(deltas, clusters, result.mde, result.se, crit, df)
        out.update(power_low=min(lo, power), power_high=max(hi, power), worst=None, icc=icc, icc_range=list(limits))
    out["trusted"] = bool(out["power_low"] >= power - TOLERANCE - 1e-9 and out["power_high"] <= power + TOLERANCE + 1e-9)
    dof = check.df if check is not None else df
    if out["mde"] is None:
        out["status"] = "none"
    elif dof is not None and dof < MIN_DF:
        out["status"] = "refused"
        out["reason"] = (f"the variance of the mean rests on {dof:.1f} Bell-McCaffrey degrees of freedom (fewer than "
                         f"{MIN_DF:g}: too few clusters, or one holding most of the items), so any one effect's power "
                         "is anywhere from near 0 to near 100%")
    else:
        out["status"] = "trusted" if out["trusted"] else "loose"
    return out
