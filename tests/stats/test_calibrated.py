"""The design-calibrated gate (memrun.stats.calibrated), the error bound, the family of arms,
Wilcoxon's exact/permutation p-values and McNemar on one cluster: arithmetic against
independent code (statsmodels, scipy, numpy) on fixed inputs, and each refusal."""

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
import statsmodels.api as sm
from statsmodels.formula.api import ols
from statsmodels.stats.multitest import multipletests

from memrun.stats.calibrated import anova_f_rows, design_check, icc_anova, studentized
from memrun.stats.family import family_verdicts, holm_adjusted
from memrun.stats.gate import gate_interval
from memrun.stats.missing import bounded, one_sided_errors
from memrun.stats.paired_tests import mcnemar_clustered, wilcoxon_signed_rank
from memrun.stats.simulation import Design, NullDraws, locomo_like, simulate, tau_for_icc
from memrun.stats.small_clusters import cr2_interval
from memrun.stats.verdict import DEGENERATE, decide

RNG = np.random.default_rng(20261204)
SIZES = (12, 30, 7, 45, 20, 9)
CLUSTERS = np.repeat(np.arange(len(SIZES)), SIZES)
DELTAS = RNG.choice([-1.0, 0.0, 1.0], p=[0.15, 0.7, 0.15], size=len(CLUSTERS))


def _moments(d, clusters):
    sizes = np.bincount(clusters).astype(float)
    return np.bincount(clusters, weights=d), np.bincount(clusters, weights=d**2), sizes


def test_studentized_se_is_the_larger_of_cr2_and_the_items_own():
    """SE = max(CR2 SE, OLS-on-a-constant SE): statsmodels for the items' SE, the CR2
    closed form already checked against its definition for the other."""
    mean, se, t = studentized(*_moments(DELTAS, CLUSTERS), null=0.01)
    ols_se = sm.OLS(DELTAS, np.ones(len(DELTAS))).fit().bse[0]
    cr2 = cr2_interval(DELTAS, CLUSTERS).se
    assert float(mean) == pytest.approx(DELTAS.mean(), abs=1e-15)
    assert float(se) == pytest.approx(max(ols_se, cr2), rel=1e-12)
    assert float(t) == pytest.approx((DELTAS.mean() - 0.01) / max(ols_se, cr2), rel=1e-12)
    # clusters that agree exactly: CR2 says 0, the items' noise is what is left
    agree = np.tile([1.0] * 6 + [0.0] * 44, 3)
    _, se, _ = studentized(*_moments(agree, np.repeat(np.arange(3), 50)))
    assert cr2_interval(agree, np.repeat(np.arange(3), 50)).se == pytest.approx(0, abs=1e-15)
    assert float(se) == pytest.approx(sm.OLS(agree, np.ones(150)).fit().bse[0], rel=1e-12)


def test_icc_matches_statsmodels_anova_and_the_f_limit():
    """The one-way ANOVA ICC from statsmodels' anova_lm mean squares; the upper limit from
    scipy's F quantile (Donner's formula with n0)."""
    frame = pd.DataFrame({"d": DELTAS, "g": CLUSTERS})
    table = sm.stats.anova_lm(ols("d ~ C(g)", data=frame).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    n, g = len(DELTAS), len(SIZES)
    n0 = (n - sum(s * s for s in SIZES) / n) / (g - 1)
    f = msb / msw
    icc, upper = icc_anova(*_moments(DELTAS, CLUSTERS), confidence=0.99)
    assert icc == pytest.approx(max(0.0, (f - 1) / (f + n0 - 1)), abs=1e-12)
    f_up = f / sps.f.ppf(0.01, g - 1, n - g)
    assert upper == pytest.approx(min(0.99, (f_up - 1) / (f_up + n0 - 1)), rel=1e-9)


def test_the_f_ratio_of_each_row_is_scipys_one_way_anova():
    """anova_f_rows on rows of cluster sums equals scipy.stats.f_oneway on the items; a row
    with no within-cluster spread is +inf, one with no spread at all nan."""
    rows = [DELTAS, np.roll(DELTAS, 7), np.repeat(np.arange(len(SIZES)) % 2, SIZES).astype(float),
            np.zeros(len(DELTAS))]
    sums = np.stack([np.bincount(CLUSTERS, weights=d) for d in rows])
    squares = np.stack([np.bincount(CLUSTERS, weights=d * d) for d in rows])
    f = anova_f_rows(sums, squares, np.bincount(CLUSTERS).astype(float))
    for got, d in zip(f[:2], rows[:2], strict=True):
        assert got == pytest.approx(sps.f_oneway(*[d[CLUSTERS == c] for c in range(len(SIZES))]).statistic, rel=1e-12)
    assert f[2] == np.inf and np.isnan(f[3])


def test_the_first_draws_are_the_first_rows_of_all_of_them():
    """NullDraws.first(k) reads the same numbers as the first k replications (clusters drawn
    item by item and from the normal approximation alike)."""
    draws = NullDraws(np.array([5.0, 40.0, 9.0, 150.0]), 300, seed=4)
    for shape in ("normal", "skewed_down"):
        whole = draws.moments(q0=0.25, icc=0.1, delta=0.02, shape=shape)
        cut = draws.first(120).moments(q0=0.25, icc=0.1, delta=0.02, shape=shape)
        for a, b in zip(whole, cut, strict=True):
            assert b.shape == (120, 4) and np.array_equal(a[:120], b)
    assert draws.first(300) is draws


def test_null_draws_follow_the_simulation_model():
    """Cluster sums from the common random numbers have the mean and variance of
    simulate()'s item-level draws (normal approximation for large clusters, exact per item
    for small ones)."""
    design = Design("mixed", (5, 12, 80, 200))
    x = simulate(design, icc=0.1, delta=0.02, reps=20000, rng=np.random.default_rng(1))
    starts = np.concatenate([[0], np.cumsum(design.sizes)[:-1]])
    ref = np.add.reduceat(x, starts, axis=1)
    sums, squares = NullDraws(np.asarray(design.sizes, float), 20000, 3).moments(q0=0.2, icc=0.1, delta=0.02)
    assert np.allclose(sums.mean(axis=0), ref.mean(axis=0), atol=4 * ref.std(axis=0) / np.sqrt(20000) + 0.05)
    assert np.allclose(sums.std(axis=0), ref.std(axis=0), rtol=0.05)
    assert np.allclose(squares.mean(axis=0), np.add.reduceat(x**2, starts, axis=1).mean(axis=0), rtol=0.03)
    assert tau_for_icc(0.1) > 0


def test_calibrated_critical_value_holds_alpha_in_every_scenario():
    """crit_up is the largest simulated 97.5% quantile: re-simulating the scenarios from the
    same draws, no scenario passes more than 2.5% at crit_up; the nominal is t on BM df."""
    check = design_check(DELTAS, CLUSTERS, replications=2000, seed=5)
    assert check.nominal_crit == pytest.approx(sps.t.ppf(0.975, check.df), rel=1e-9)
    assert check.crit_up >= check.nominal_crit and check.crit_down <= -check.nominal_crit
    assert check.rate <= 0.025 + 1e-12 and check.rate <= check.nominal_rate
    assert check.instrument() == {"method": "design_calibrated_t", "replications": check.replications, "seed": 5,
                                  "level": 0.03}
    again = design_check(DELTAS, CLUSTERS, replications=2000, seed=5)
    assert again == check  # seeded: the same verdict twice


def test_skewed_few_cluster_designs_hold_the_level():
    """The reduced form of bench/bench_gate_error.py's skewed rows: with skewed effects on 5
    LoCoMo-like clusters the nominal t gate passes ~10% of null runs; memrun's gate stays
    near 2.5% (tolerance 4.5%, 2 Monte-Carlo SE above 2.5% at 300 replications)."""
    design = locomo_like(5)
    x = simulate(design, icc=0.2, delta=0.0, reps=300, rng=np.random.default_rng(33), skewed=True)
    clusters = design.cluster_codes()
    ours = nominal = 0
    for r, d in enumerate(x):
        g = gate_interval(d, clusters, resamples=200, seed=r, check=True)
        hold = (DEGENERATE, g.degenerate) if g.degenerate else None
        ours += decide(g, n_items=len(d), n_clusters=5, hold=hold).passed
        nominal += g.small.low > 0
    assert ours / 300 <= 0.045, f"false-pass rate {100 * ours / 300:.1f}%"
    assert nominal / 300 >= 0.06, "the design no longer shows the nominal gate's fault"


def test_a_dominant_cluster_is_refused_or_held():
    """One cluster of 1,500 items beside four of 10 (df 1.04): the design check's critical
    value is far above t(1.04)'s or the verdict is held; it never passes on the nominal."""
    d = np.concatenate([np.r_[np.ones(60), np.zeros(1440)], np.r_[np.ones(3), np.zeros(7)] * 1,
                        np.zeros(10), np.r_[np.ones(2), np.zeros(8)], np.r_[1.0, np.zeros(9)]])
    clusters = np.repeat(np.arange(5), (1500, 10, 10, 10, 10))
    g = gate_interval(d, clusters, resamples=500, check=True)
    assert g.check.df == pytest.approx(1.04, abs=0.01)
    verdict = decide(g, n_items=len(d), n_clusters=5, hold=(DEGENERATE, g.degenerate) if g.degenerate else None)
    assert not verdict.passed


def test_the_error_bound_equals_imputing_the_worst_case():
    """Horowitz-Manski: the bound of the mean over n + k items with the errored items at
    their worst (best) case is the paired bound carried over, computed here by imputation."""
    n, low, high = 200, -0.01, 0.05
    a_when_b_err = np.array([1.0, 1.0, 0.0])  # A's scores where only B errored
    b_when_a_err = np.array([0.0, 1.0])  # B's scores where only A errored
    bound = one_sided_errors(a_when_b_err, b_when_a_err)
    worst = np.r_[0.0 - a_when_b_err, b_when_a_err - 1.0]
    best = np.r_[1.0 - a_when_b_err, b_when_a_err - 0.0]
    lo, hi = bounded(low, high, n, bound)
    assert lo == pytest.approx((n * low + worst.sum()) / (n + 5)) and hi == pytest.approx((n * high + best.sum()) / 205)
    assert bound.k == 5 and bounded(low, high, n, one_sided_errors([], [])) == (low, high)


def test_family_verdicts_are_holms():
    p = [0.001, 0.004, 0.02, 0.0011, 0.3]
    reject = multipletests(p, alpha=0.025, method="holm")[0]
    adjusted = multipletests(p, method="holm")[1]
    assert family_verdicts(p, [True] * 5) == list(reject)
    assert holm_adjusted(p) == pytest.approx(list(adjusted))
    assert family_verdicts(p, [False, True, True, True, True])[0] is False  # its own gate must pass too
    with pytest.raises(ValueError):
        family_verdicts([0.1], [True, False])


def _signed_rank_permutation(d):
    """Two-sided permutation p-value of Wilcoxon's T+ over all 2**n sign vectors (ties: midranks)."""
    d = d[d != 0]
    ranks = sps.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    total = ranks.sum()
    stats = np.array([sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product((0, 1), repeat=len(d))])
    centre = total / 2
    return min(1.0, np.mean(np.abs(stats - centre) >= abs(observed - centre) - 1e-9))


def test_wilcoxon_is_exact_or_a_permutation_when_few_units_tie():
    """A cluster tied at zero and tied magnitudes: the normal approximation gave 0.042 where
    the exact permutation gives 0.051 (issue 33); memrun's p-value equals an independent
    enumeration of the 2**n sign vectors."""
    d = np.array([0.0, 0.2, 0.2, 0.1, 0.3, 0.1, -0.1, 0.4, 0.2, 0.05, 0.1])
    result = wilcoxon_signed_rank(np.zeros(len(d)), d, unit="cluster")
    assert result.method == "permutation"
    assert result.p_value == pytest.approx(_signed_rank_permutation(d), abs=1e-12)
    normal = sps.wilcoxon(d[d != 0], method="approx").pvalue
    assert abs(normal - result.p_value) > 1e-3  # the approximation it replaces differs
    untied = np.array([0.0, 0.11, 0.23, -0.05, 0.31, 0.42, 0.5, 0.07])
    r2 = wilcoxon_signed_rank(np.zeros(8), untied)
    assert r2.method == "exact" and r2.p_value == pytest.approx(_signed_rank_permutation(untied), abs=1e-12)


def test_mcnemar_reports_no_p_value_from_one_cluster():
    a = np.array([1, 0, 1, 0, 1, 1, 0, 0], bool)
    b = np.array([0, 1, 1, 1, 1, 1, 1, 0], bool)
    one = mcnemar_clustered(a, b, np.zeros(8, int))
    assert one.p_value is None and "one" in one.skipped or "1 cluster" in one.skipped
    two = mcnemar_clustered(a, b, np.repeat([0, 1], 4))
    assert two.p_value is not None


def test_simulated_mde_reaches_the_target_power_with_the_gates_own_critical_value():
    """The MDE is where the design's simulated comparisons, each read with the critical value
    its own check would give, pass in 80% of runs; it is never below the formula's with the
    calibrated critical value at the null's SE (an effect adds discordance)."""
    from memrun.stats.mde import PowerModel, simulated_mde

    design = locomo_like(10)
    d = simulate(design, icc=0.0, delta=0.0, reps=1, rng=np.random.default_rng(4))[0]
    clusters = design.cluster_codes()
    gate = gate_interval(d, clusters, resamples=200, check=True)
    mde, at = simulated_mde(PowerModel(d, clusters, gate.check), start=0.03)
    assert np.isfinite(mde) and at == pytest.approx(0.8, abs=0.03)
    assert mde >= 0.9 * (gate.check.crit_up + 0.8416) * gate.se


def test_many_clusters_read_the_edgeworth_expansion_of_the_same_scenarios(monkeypatch):
    """Above 200 clusters the check reads Cornish-Fisher critical values instead of
    simulating; on 250 LoCoMo-sized clusters at ICC 0.05 they agree with the simulation
    within 0.1."""
    import memrun.stats.calibrated as calibrated
    from memrun.stats.simulation import LOCOMO_SIZES

    design = Design("250", tuple((LOCOMO_SIZES * 25)[:250]))
    d = simulate(design, icc=0.05, delta=0.0, reps=1, rng=np.random.default_rng(2))[0]
    edge = calibrated.design_check(d, design.cluster_codes())
    assert edge.method == "design_calibrated_t_edgeworth" and edge.replications == 0
    monkeypatch.setattr(calibrated, "SIMULATE_UP_TO", 10**6)
    sim = calibrated.design_check(d, design.cluster_codes())
    assert edge.crit_up == pytest.approx(sim.crit_up, abs=0.1)
    assert edge.nominal_rate == pytest.approx(sim.nominal_rate, abs=0.01)


@pytest.mark.parametrize("seed", range(6))
def test_the_two_sided_p_agrees_with_the_interval_shown(seed):
    """Holm across categories reads ``p_value``: a category whose shown 95% interval holds zero
    never counts as significant. With few clusters the t interval, widened by the design
    check, is shown; the bootstrap's own p (too narrow there) must not decide alone. The t
    side's p is scipy's t tail at the statistic scaled by t quantile / calibrated critical value."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(8), 40)
    d = rng.choice([-1.0, 0.0, 1.0], size=clusters.size, p=[0.05, 0.87, 0.08]) \
        + np.repeat(rng.normal(0.0, 0.03, 8), 40)
    g = gate_interval(d, clusters, check=True, replications=500, seed=seed)
    assert g.consulted and g.low <= g.t_low  # 8 clusters: the t interval is shown
    assert (g.p_value <= 0.05) == (g.low > 0 or g.high < 0)
    mean = d.mean()
    crit = (mean - g.t_low) / g.se if mean > 0 else (g.t_high - mean) / g.se
    t_side = 2 * sps.t.sf(abs(mean) / g.se * sps.t.ppf(0.975, g.df) / crit, g.df)
    assert g.p_value == pytest.approx(max(t_side, g.bootstrap.p_value), rel=1e-9)
