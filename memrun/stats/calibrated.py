"""A critical value calibrated on this comparison's own design, and the design check that
reports it (the gate's ``design_check`` instrument).

Why. A one-sided t-type bound assumes the mean delta is about symmetric around the truth.
With few clusters whose effects are skewed (a rare cluster where B collapses), with one
cluster holding nearly every item, or with three clusters, the t statistic's tail is
heavier than Student's on the Bell-McCaffrey degrees of freedom, and a nominal 2.5% gate
passes 4-12% of null comparisons (``bench/bench_gate_error.py``). No fixed critical value
is right for every design, so the gate computes one for the design in hand: a parametric
bootstrap of the studentized statistic under the null (Beran 1988, "Prepivoting test
statistics", JASA 83, 687-697; Loh 1987, "Calibrating confidence coefficients", JASA 82,
155-162), maximised over the nuisance parameters the data leave open (Berger & Boos
1994, "P values maximised over a confidence set for the nuisance parameter", JASA 89,
1012-1016).

Statistic. For per-item deltas d_i in G clusters (sizes n_g, N items, mean m),

    T = (m - delta0) / SE,   SE = max(SE_CR2, SE_items),

SE_CR2 the CR2 standard error of :mod:`memrun.stats.small_clusters` and SE_items =
sd(d) / sqrt(N) the standard error the same items would have if independent. Positive
intra-cluster correlation only widens an interval, so a cluster-robust SE below the
items' own is an artefact of a handful of clusters that happen to agree (three clusters
with 12/12/13 wins): the larger is read (as Angrist & Pischke 2009, sec. 8.2.3, read the
larger of the conventional and robust standard errors).

Null model (:func:`memrun.stats.simulation.simulate_moments`): the design's own cluster
sizes, paired deltas in {-s, 0, +s} with the observed share of discordant pairs q0
(scale s: T does not depend on it), true delta ``delta0`` (the gate's threshold), and a
cluster random effect of intra-cluster correlation ICC in three shapes: normal, skewed
toward B (tau * (1 - Exponential(1)), skewness -2: a long tail of clusters where B is
much worse) and its mirror. The ICC is estimated by one-way ANOVA (Searle, Casella &
McCulloch 1992, sec. 3.6, unbalanced; Donner 1986) with an upper confidence limit from
its F ratio; the scenarios are ICC 0 and the three shapes at the upper limit (the
false-pass rate grows with the ICC in every shape: ``bench/bench_gate_error.py``).

Critical values. ``crit_up`` is the largest, over the scenarios, of the (1 - alpha)
quantile of the simulated T (alpha = 2.5%, one-sided), never below the nominal t
quantile on the Bell-McCaffrey degrees of freedom; ``crit_down`` the mirror (the alpha
quantile, never above minus the nominal). The interval is ``[m - crit_up SE,
m - crit_down SE]``: PASS needs T > crit_up, so in every scenario at most alpha of the
simulated null comparisons pass. ``nominal_rate`` is the share of simulated null
comparisons the nominal t gate would pass in the worst scenario, printed beside the
verdict; ``rate`` the same at ``crit_up`` (at most alpha, unless more than alpha of the
simulated comparisons have no spread at all: then ``crit_up`` is infinite and the gate is
refused, ``refused`` says why).

Assumption (said with every verdict): cluster effects no more skewed than an exponential
(skewness 2) and an ICC inside the simulated range; the simulation ignores strata.

Cost: 2 x replications x G binomial draws per scenario (7 scenarios): milliseconds for
LoCoMo's 10 conversations, ~0.1-0.3 s for 1,000 clusters at 1,000 replications.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memrun.lazy import lazy
from memrun.stats.bootstrap import _as_deltas, _cluster_totals
from memrun.stats.simulation import NullDraws, tau_for_icc
from memrun.stats.small_clusters import bell_mccaffrey_df

if TYPE_CHECKING:
    from scipy import special as scipy_special
else:
    scipy_special = lazy("scipy.special")

METHOD = "design_calibrated_t"
METHOD_EDGEWORTH = "design_calibrated_t_edgeworth"
REPLICATIONS = 2000
"""Simulated null comparisons per scenario, at least; designs with fewer clusters get more
(:func:`replications_for`), up to twice this."""
DRAW_BUDGET = 2_000_000
"""Cluster sums drawn per scenario that :func:`replications_for` aims at."""
LEVEL = 0.03
"""The configured false-pass level (``--max-false-pass``): a design whose gate cannot be held
at or below it is never passed."""
ICC_CONFIDENCE = 0.99
"""One-sided confidence of the ICC's upper limit (Berger & Boos's confidence set)."""
SHAPES = ("normal", "skewed_down", "skewed_up")
SIMULATE_UP_TO = 200
"""Up to this many clusters the scenarios are simulated; above it their critical values come
from the Edgeworth expansion of the studentized mean (:func:`edgeworth_scenarios`), where it
is accurate (the skew it corrects falls as 1 / sqrt(G)) and the simulation would cost seconds."""
EFFECT_SKEW = {"normal": 0.0, "skewed_down": -2.0, "skewed_up": 2.0}
"""Skewness of the scenarios' cluster effects (an exponential's is 2)."""

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class DesignCheck:
    """The design-calibrated critical values of one comparison (module docstring).

    ``crit_up``/``crit_down``: the critical values the gate reads (``T > crit_up`` passes,
    ``T < crit_down`` fails); ``nominal_crit`` the t quantile on ``df`` (Bell-McCaffrey)
    they replace when larger; ``nominal_rate`` / ``rate``: the worst scenario's simulated
    false-pass share at the nominal / the used critical value (fractions); ``level`` the
    configured level; ``icc``/``icc_upper`` the ICC estimate and its upper limit;
    ``discordance`` the share of non-zero deltas; ``worst`` the scenario that set
    ``crit_up`` (``"shape@icc"``); ``p_value`` the one-sided p-value of "B is no better than delta0" under the worst scenario,
    (1 + #{T* >= T}) / (replications + 1) (a Monte-Carlo p-value, Davison & Hinkley 1997,
    sec. 4.2.1), never below the nominal t's; ``refused`` why no critical value holds the level (or None).
    ``method``, ``replications`` and ``seed`` name how the verdict was reached."""

    method: str
    replications: int
    seed: int
    level: float
    alpha: float
    nominal_crit: float
    df: float
    crit_up: float
    crit_down: float
    nominal_rate: float
    rate: float
    icc: float
    icc_upper: float
    discordance: float
    n_clusters: int
    worst: str
    p_value: float = 1.0
    refused: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (infinite critical values as None)."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}

    def instrument(self) -> dict[str, Any]:
        """What names how the verdict was reached: method, replications, seed, level."""
        return {"method": self.method, "replications": self.replications, "seed": self.seed, "level": self.level}


@functools.lru_cache(maxsize=2)
def null_draws(sizes: bytes, replications: int, seed: int) -> NullDraws:
    """The design's common random numbers, kept for the next check of the same design (a
    sweep, the power search, the error-rate bench): a pure function of its arguments."""
    return NullDraws(np.frombuffer(sizes, dtype=np.float64), replications, seed)


def replications_for(n_clusters: int, at_least: int = REPLICATIONS) -> int:
    """Replications per scenario for ``n_clusters`` clusters: :data:`DRAW_BUDGET` cluster
    draws, within [at_least, 2 x at_least] (a 97.5% quantile from 20,000 draws moves by
    about 0.03, from 2,000 by about 0.09)."""
    return int(min(2 * at_least, max(at_least, DRAW_BUDGET // max(n_clusters, 1))))


def studentized(sums: FloatArray, sumsq: FloatArray, sizes: FloatArray, null: float = 0.0
                ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(mean, SE, T) from cluster sums and sums of squares, vectorised over leading axes.

    Args:
        sums, sumsq: shape (..., G): per-cluster sums of the deltas and of their squares.
        sizes: shape (G,), items per cluster (N = sizes.sum()).
        null: delta0, the T statistic's null value.

    Returns:
        mean (...,), SE = max(SE_CR2, SE_items) (...,), T = (mean - null) / SE with
        +/-inf where SE is 0 and the mean differs from ``null`` (0 where it equals it).
    """
    n = float(sizes.sum())
    mean = sums.sum(axis=-1) / n
    resid = sums - mean[..., None] * sizes
    leverage = np.where(sizes < n, 1.0 - sizes / n, 1.0)
    var_cr2 = (resid**2 / leverage).sum(axis=-1) / n**2
    var_items = np.maximum(sumsq.sum(axis=-1) - n * mean**2, 0.0) / max(n - 1.0, 1.0) / n
    se = np.sqrt(np.maximum(var_cr2, var_items))
    excess = mean - null
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, excess / np.where(se > 0, se, 1.0), np.sign(excess) * np.inf)
    t = np.where((se <= 0) & (np.abs(excess) <= 1e-15), 0.0, t)
    return mean, se, t


def icc_anova(sums: FloatArray, sumsq: FloatArray, sizes: FloatArray,
              confidence: float = ICC_CONFIDENCE) -> tuple[float, float]:
    """(ICC estimate, one-sided upper confidence limit) by one-way ANOVA on the deltas.

    Unbalanced one-way random-effects ANOVA (Searle, Casella & McCulloch 1992, sec. 3.6):
    MSB and MSW on G - 1 and N - G degrees of freedom, n0 = (N - sum n_g**2 / N) / (G - 1),
    ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW) clipped to [0, 1); the upper limit replaces
    F = MSB / MSW by F / F_{1 - confidence}(G - 1, N - G) (Donner 1986, the balanced limit
    with n0). With singleton clusters or no within-cluster variance the ICC is not
    identified: (0, 0) and (0, 1) respectively... see the code for the edge cases.
    """
    n_total, g = float(sizes.sum()), len(sizes)
    if g < 2 or n_total <= g:
        return 0.0, 0.0  # one cluster, or one item per cluster: no within/between split
    mean = sums.sum() / n_total
    ssb = float(((sums / sizes - mean) ** 2 * sizes).sum())
    ssw = float(sumsq.sum() - (sums**2 / sizes).sum())
    msb, msw = ssb / (g - 1), max(ssw, 0.0) / (n_total - g)
    n0 = (n_total - float((sizes**2).sum()) / n_total) / (g - 1)
    if msw <= 0:
        return (0.0, 0.0) if msb <= 0 else (0.99, 0.99)
    f = msb / msw
    f_low = float(scipy_special.fdtri(g - 1, n_total - g, 1.0 - confidence))

    def icc(ratio: float) -> float:
        return float(min(0.99, max(0.0, (ratio - 1.0) / (ratio + n0 - 1.0))))

    return icc(f), icc(f / f_low) if f_low > 0 else 0.99


def edgeworth_scenarios(sizes: FloatArray, q0: float, icc: float, df: float, alpha: float,
                        t_obs: float) -> list[tuple[str, float, float, float, float]]:
    """Per scenario: (name, upper critical value, lower critical value, nominal-gate rate,
    p-value of ``t_obs``), from the one-term Edgeworth expansion of the studentized mean,
    P(T <= x) = F(x) + (k / 6)(2 x**2 + 1) phi(x) (Hall 1992, "The bootstrap and Edgeworth
    expansion", sec. 2.6; F Student's t on ``df``), with k the skewness of the mean of the
    cluster sums: sum n_g**3 k3 / (sum n_g**2 tau**2 + n_g q0)**1.5, k3 the effect's third
    cumulant (+-2 tau**3 for the skewed shapes). Critical values by Cornish-Fisher:
    x = c -+ (k / 6)(2 c**2 + 1), c the nominal t quantile."""
    tau = tau_for_icc(icc, q0)
    variance = float((sizes**2 * tau**2 + sizes * q0).sum())
    c = float(scipy_special.stdtrit(df, 1.0 - alpha))
    phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    phi_obs = math.exp(-t_obs * t_obs / 2) / math.sqrt(2 * math.pi) if math.isfinite(t_obs) else 0.0
    out = []
    for shape in (SHAPES if icc > 0 else ("normal",)):
        k = EFFECT_SKEW[shape] * tau**3 * float((sizes**3).sum()) / variance**1.5 if variance > 0 else 0.0
        term = (k / 6) * (2 * c * c + 1)
        rate = float(scipy_special.stdtr(df, -c)) - term * phi
        p = (float(scipy_special.stdtr(df, -t_obs)) - (k / 6) * (2 * t_obs**2 + 1) * phi_obs
             if math.isfinite(t_obs) else float(t_obs < 0))
        out.append((f"{shape}@{icc:.3f}", c - term, -c - term, max(0.0, rate), min(1.0, max(0.0, p))))
    return out


def design_check(
    deltas: ArrayLike,
    clusters: ArrayLike | Iterable[Hashable] | None = None,
    *,
    null: float = 0.0,
    replications: int = REPLICATIONS,
    seed: int = 7,
    level: float = LEVEL,
    confidence: float = 0.95,
    icc_confidence: float = ICC_CONFIDENCE,
) -> DesignCheck:
    """Simulate this design under the null and calibrate the gate's critical values.

    Args:
        deltas: shape (n,), per-item B-minus-A deltas (any unit).
        clusters: None (items independent) or shape (n,) cluster keys: the clustering the
            gate reads.
        null: the threshold delta0 in the deltas' unit (``--gate-min-delta``).
        replications: simulated null comparisons per scenario, at least (>= 100); fewer
            clusters get more (:func:`replications_for`), the number used is recorded.
        seed: the simulation's seed (recorded in the verdict's instrument).
        level: the configured false-pass level; crit_up infinite (the gate cannot hold
            alpha) is reported with ``refused``.
        confidence: the gate's two-sided confidence (alpha = (1 - confidence) / 2).

    Returns:
        DesignCheck (module docstring).

    Raises:
        ValueError: bad deltas (``paired_bootstrap``'s rules), replications below 100, a
            level or confidence outside (0, 1).
    """
    values = _as_deltas(deltas)
    if replications < 100 or not 0 < level < 1 or not 0 < confidence < 1:
        raise ValueError(f"design_check needs replications >= 100 and level, confidence in (0, 1); got "
                         f"{replications}, {level}, {confidence}")
    alpha = (1.0 - confidence) / 2.0
    sums, sizes, inverse = _cluster_totals(values, clusters)
    replications = replications_for(len(sizes), replications)
    sumsq = np.bincount(inverse, weights=values**2, minlength=len(sizes)).astype(np.float64)
    g = len(sizes)
    df = bell_mccaffrey_df(sizes) if g >= 2 else 0.0
    nominal = float(scipy_special.stdtrit(df, 1.0 - alpha)) if df >= 1 else math.inf
    discordance = float(np.count_nonzero(values) / len(values))
    icc, icc_up = icc_anova(sums, sumsq, sizes, icc_confidence)
    scale = math.sqrt(float((values**2).mean()) / discordance) if discordance > 0 else 1.0
    q0 = min(1.0, max(discordance, 0.02))
    delta0 = float(np.clip(null / scale, -0.9, 0.9))
    t_obs = float(studentized(sums, sumsq, sizes, null)[2])
    nominal_p = float(scipy_special.stdtr(df, -t_obs)) if df >= 1 else 1.0
    scenarios = [("normal", 0.0)] + ([(shape, icc_up) for shape in SHAPES] if icc_up > 0 else [])
    if g > SIMULATE_UP_TO and df >= 1:
        rows = edgeworth_scenarios(sizes, q0, 0.0, df, alpha, t_obs) + (
            edgeworth_scenarios(sizes, q0, icc_up, df, alpha, t_obs) if icc_up > 0 else [])
        replications = 0
        worst_q, worst = max((r[1], r[0]) for r in rows)
        crit_up, crit_down = max(nominal, worst_q), min(-nominal, min(r[2] for r in rows))
        nominal_rate = max(r[3] for r in rows)
        rate = min(alpha, nominal_rate) if crit_up > nominal else nominal_rate
        p_value = max(nominal_p, max(r[4] for r in rows))
    else:
        draws = null_draws(sizes.tobytes(), replications, int(seed))
        ups, downs, t_all = [], [], []
        for shape, i in scenarios:
            s, q = draws.moments(q0=q0, icc=i, delta=delta0, shape=shape)
            _, _, t = studentized(s, q, sizes, delta0)
            ups.append((float(np.quantile(t, 1.0 - alpha, method="higher")), f"{shape}@{i:.3f}"))
            downs.append(float(np.quantile(t, alpha, method="lower")))
            t_all.append(t)
        worst_q, worst = max(ups)
        crit_up = max(nominal, worst_q)
        crit_down = min(-nominal, min(downs))
        p_value = max(nominal_p, max((1.0 + float((t >= t_obs).sum())) / (replications + 1) for t in t_all))
        nominal_rate = max(float((t > nominal).mean()) for t in t_all)
        rate = max(float((t > crit_up).mean()) for t in t_all) if math.isfinite(crit_up) else 0.0
    refused = None
    if not math.isfinite(crit_up):
        share = max(float(np.isinf(t).mean()) for t in t_all) if replications else 1.0
        refused = (f"no critical value holds {100 * alpha:.1f}% on this design: {100 * share:.0f}% of its simulated "
                   "null comparisons have no spread at all (too few clusters, or one holding nearly every item)")
    elif rate > level:
        refused = (f"the simulated false-pass rate at the gate's critical value is {100 * rate:.1f}%, above the "
                   f"level {100 * level:.1f}%")
    return DesignCheck(
        method=METHOD if replications else METHOD_EDGEWORTH, replications=int(replications), seed=int(seed), level=float(level), alpha=alpha,
        nominal_crit=nominal, df=float(df), crit_up=float(crit_up), crit_down=float(crit_down),
        nominal_rate=nominal_rate, rate=rate, icc=icc, icc_upper=icc_up, discordance=discordance,
        n_clusters=g, worst=worst if worst_q > nominal else "nominal", p_value=min(1.0, p_value), refused=refused,
    )


def assumption_line(check: DesignCheck | None, n_clusters: int, clustered: bool) -> str:
    """What the verdict assumes and what the simulation found for this design, in one line."""
    unit = "clusters" if clustered else "items"
    base = (f"assumes: the {n_clusters} {unit} are independent draws, and cluster effects are no more skewed than "
            "an exponential (skewness 2) with an ICC at most the data's 99% upper limit")
    if check is None:
        return base + "; the design was not simulated"
    worst = "" if check.worst == "nominal" else f" (worst case {check.worst.replace('@', ' effects at ICC ')})"
    found = (f"; simulated on this design, the nominal t gate passes {100 * check.nominal_rate:.1f}% of null "
             f"comparisons{worst}, this gate {100 * check.rate:.1f}% (level {100 * check.level:.0f}%)")
    return base + found


def anova_f_rows(sums: FloatArray, sumsq: FloatArray, sizes: FloatArray) -> FloatArray:
    """The one-way ANOVA ratio F = MSB / MSW of :func:`icc_anova` for each row of (reps, G)
    cluster sums and sums of squares (shape (reps,)); +inf where MSW is 0 and MSB is not,
    nan where both are 0. Needs G >= 2 clusters and more items than clusters."""
    n_total, g = float(sizes.sum()), len(sizes)
    mean = sums.sum(axis=-1, keepdims=True) / n_total
    msb = (((sums / sizes - mean) ** 2) * sizes).sum(axis=-1) / (g - 1)
    msw = np.maximum(sumsq.sum(axis=-1) - (sums**2 / sizes).sum(axis=-1), 0.0) / (n_total - g)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(msw > 0, msb / np.where(msw > 0, msw, 1.0), np.where(msb > 0, np.inf, np.nan))


def upper_icc_rows(sums: FloatArray, sumsq: FloatArray, sizes: FloatArray,
                   confidence: float = ICC_CONFIDENCE) -> FloatArray:
    """:func:`icc_anova`'s upper limit for each row of (reps, G) cluster sums, vectorised."""
    n_total, g = float(sizes.sum()), len(sizes)
    if g < 2 or n_total <= g:
        return np.zeros(len(sums))
    n0 = (n_total - float((sizes**2).sum()) / n_total) / (g - 1)
    f_low = float(scipy_special.fdtri(g - 1, n_total - g, 1.0 - confidence))
    f = anova_f_rows(sums, sumsq, sizes)
    ratio = np.where(np.isnan(f), 0.0, f) / f_low
    with np.errstate(invalid="ignore"):
        icc = np.where(np.isfinite(ratio), (ratio - 1.0) / (ratio + n0 - 1.0), 0.99)
    return np.clip(icc, 0.0, 0.99)
