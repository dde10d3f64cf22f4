"""Tests for memrun.stats.paired_tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrun.stats.paired_tests import mcnemar_exact, wilcoxon_signed_rank, wilcoxon_skip_reason


def pairs(b01: int, b10: int, both: int, neither: int) -> tuple[list[bool], list[bool]]:
    """(a_correct, b_correct) with the given cell counts."""
    a = [False] * b01 + [True] * b10 + [True] * both + [False] * neither
    b = [True] * b01 + [False] * b10 + [True] * both + [False] * neither
    return a, b


@pytest.mark.parametrize(
    "b01, b10, p_value",
    [
        (8, 1, 2 * (9 + 1) / 2**9),  # 2 * P(X >= 8 | n=9, p=1/2) = 0.0390625
        (0, 5, 2 / 2**5),  # 0.0625
        (2, 1, 1.0),
        (3, 3, 1.0),
        (10, 0, 2 / 2**10),
    ],
)
def test_mcnemar_exact_hand_values(b01: int, b10: int, p_value: float) -> None:
    a, b = pairs(b01, b10, both=20, neither=7)
    result = mcnemar_exact(a, b)
    assert (result.b01, result.b10, result.n_pairs) == (b01, b10, b01 + b10 + 27)
    assert result.p_value == pytest.approx(p_value, rel=1e-12)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    a, b = pairs(0, 0, both=5, neither=5)
    assert mcnemar_exact(a, b).p_value == 1.0


def test_mcnemar_accepts_zero_one_arrays() -> None:
    result = mcnemar_exact(np.array([1, 0, 0, 1]), np.array([1, 1, 1, 0]))
    assert (result.b01, result.b10) == (2, 1)


@pytest.mark.parametrize(
    "a, b, message",
    [([True], [True, False], "items"), ([], [], "at least one"), ([0, 2], [1, 1], "0/1"),
     ([[True]], [[True]], "1-D"), (["yes"], ["no"], "0/1")],
)
def test_mcnemar_rejects_bad_input(a, b, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mcnemar_exact(a, b)


def test_wilcoxon_hand_values() -> None:
    a = np.array([0.50, 0.40, 0.30, 0.20, 0.10])
    # differences +1, -2, +3, +4, +5 (x 0.01): W- = 2, exact two-sided p = 2 * 3 / 32
    b = a + np.array([0.01, -0.02, 0.03, 0.04, 0.05])
    result = wilcoxon_signed_rank(a, b)
    assert result is not None
    assert result.statistic == 2.0
    assert result.p_value == pytest.approx(6 / 32)
    assert (result.n_units, result.n_nonzero) == (5, 5)
    assert result.mean_delta == pytest.approx(0.022)
    all_up = wilcoxon_signed_rank(a, a + 0.1)
    assert all_up is not None and all_up.p_value == pytest.approx(2 / 32)


def test_wilcoxon_drops_zero_differences() -> None:
    a = [0.5, 0.5, 0.5, 0.5]
    result = wilcoxon_signed_rank(a, [0.6, 0.5, 0.7, 0.8])
    assert result is not None and result.n_nonzero == 3 and result.n_units == 4
    assert result.p_value == pytest.approx(2 / 8)


@pytest.mark.parametrize(
    "a, b, reason",
    [([0.5], [0.6], "fewer than 2 paired units"), ([], [], "fewer than 2 paired units"),
     ([0.5, 0.4], [0.5, 0.4], "every paired difference is zero")],
)
def test_wilcoxon_returns_none_with_a_reason(a, b, reason: str) -> None:
    assert wilcoxon_signed_rank(a, b) is None
    assert wilcoxon_skip_reason(a, b) == reason


def test_wilcoxon_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="units"):
        wilcoxon_signed_rank([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="NaN"):
        wilcoxon_signed_rank([0.1, math.nan], [0.1, 0.2])


def test_holm_by_hand() -> None:
    from memrun.stats import holm

    adjusted, reject = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max-accumulated 0.06
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert reject.tolist() == [True, False, False, True]
    with pytest.raises(ValueError):
        holm([1.5])


def test_mcnemar_matches_scipy_binomtest() -> None:
    from scipy import stats as sps

    rng = np.random.default_rng(4)
    for _ in range(20):
        a = rng.random(200) < 0.6
        b = rng.random(200) < rng.uniform(0.4, 0.8)
        got = mcnemar_exact(a, b)
        n = got.b01 + got.b10
        assert got.p_value == pytest.approx(sps.binomtest(got.b01, n, 0.5).pvalue, rel=1e-9)


def test_clustered_mcnemar_is_mcnemar_on_singletons_and_cluster_aware_otherwise() -> None:
    """Durkalski et al. (2003): with one pair per cluster the statistic is McNemar's
    (b - c)^2 / (b + c); with clusters it reads the spread of the clusters' b_k - c_k."""
    from scipy.stats import chi2

    from memrun.stats import mcnemar_clustered

    a = np.array([0, 0, 0, 1, 1, 0, 0, 0, 1, 0], bool)
    b = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 0], bool)
    single = mcnemar_clustered(a, b, np.arange(10))
    assert single.p_value == pytest.approx(chi2.sf((5 - 1) ** 2 / 6, 1))
    clusters = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])  # cluster 0: b-c = 3 - 1, cluster 1: 2 - 0
    got = mcnemar_clustered(a, b, clusters)
    assert got.p_value == pytest.approx(chi2.sf(16 / (2**2 + 2**2), 1))
    assert (got.method, got.n_clusters, got.b01, got.b10) == ("durkalski", 2, 5, 1)


def test_clustered_mcnemar_holds_its_level_where_the_exact_test_does_not() -> None:
    """Null runs with LoCoMo-like clusters at ICC 0.2: the plain exact McNemar says p < .05
    in most of them; the cluster-adjusted test in about 5-10% (10 clusters)."""
    from memrun.stats import mcnemar_clustered, mcnemar_exact
    from memrun.stats.simulation import locomo_like, simulate

    design = locomo_like()
    x = simulate(design, icc=0.2, delta=0.0, reps=200, rng=np.random.default_rng(4))
    clusters = design.cluster_codes()
    plain = adjusted = 0
    for d in x:
        a, b = d < 0, d > 0  # one discordant direction each; ties are 0/0
        plain += mcnemar_exact(a, b).p_value < 0.05
        adjusted += mcnemar_clustered(a, b, clusters).p_value < 0.05
    assert plain / 200 > 0.5 and adjusted / 200 < 0.12


def test_wilcoxon_reports_its_smallest_attainable_p() -> None:
    from memrun.stats import wilcoxon_signed_rank

    got = wilcoxon_signed_rank(np.zeros(4), np.array([0.1, 0.2, 0.3, 0.4]), unit="cluster")
    assert got.min_p == pytest.approx(2 / 16) and got.p_value >= got.min_p


@pytest.mark.parametrize(("n", "tied", "method", "scipy_method"), [
    (9, False, "exact", "exact"),
    (40, False, "exact", "exact"),
    (11, True, "permutation", None),  # every one of the 2**11 sign vectors: scipy's permutation test, exhaustive
    (30, True, "permutation", None),
    (80, True, "normal", "approx"),
    (80, False, "normal", "approx"),
])
def test_wilcoxon_equals_scipy_on_fixed_inputs(n: int, tied: bool, method: str, scipy_method: str | None) -> None:
    """memrun's numpy Wilcoxon (exact convolution, permutation over all sign vectors, normal)
    equals scipy.stats.wilcoxon on the same differences."""
    from scipy import stats

    rng = np.random.default_rng(n + tied)
    d = rng.normal(0.3, 1.0, n)
    if tied:
        d = np.round(d * 2) / 2  # magnitudes tie
        d[d == 0] = 0.5
    got = wilcoxon_signed_rank(np.zeros(n), d)
    assert got.method == method
    if scipy_method is None and n <= 13:
        how = stats.PermutationMethod(n_resamples=2**n)
        want = stats.wilcoxon(d, method=how)
    elif scipy_method is None:  # 2**30 sign vectors: too many for scipy; the enumeration's exact count by brute
        want = None
    else:
        want = stats.wilcoxon(d, method=scipy_method, correction=False)
    if want is not None:
        assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-9, abs=1e-15)
        assert got.statistic == pytest.approx(float(want.statistic))
    else:  # the convolution against a Monte-Carlo sign-flip estimate (200,000 draws, +-0.003)
        ranks = stats.rankdata(np.abs(d))
        observed = ranks[d > 0].sum()
        signs = np.random.default_rng(1).integers(0, 2, size=(200_000, n)).astype(bool)
        sims = (signs * ranks).sum(axis=1)
        mc = min(1.0, 2 * min((sims <= observed + 1e-9).mean(), (sims >= observed - 1e-9).mean()))
        assert got.p_value == pytest.approx(mc, abs=0.003)
