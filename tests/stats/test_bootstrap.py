"""Tests for memrun.stats.bootstrap."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats as sps

from memrun.stats import bootstrap as bs
from memrun.stats.bootstrap import BootstrapResult, paired_bootstrap


def _means_by_index(*args, **kw):
    totals, weights = bs._totals_by_index(*args, **kw)
    return totals / weights


def _means_by_types(*args, **kw):
    totals, weights = bs._totals_by_types(*args, **kw)
    return totals / weights


def label_deltas(wins: int, ties: int, losses: int) -> list[float]:
    """+1 per win, -1 per loss, 0 per tie, in the order wins, losses, ties."""
    return [1.0] * wins + [-1.0] * losses + [0.0] * ties


# The "How wide the interval is" table of the methodology reference:
# (n, wins, ties, losses, cluster size or None, mean pp, low pp, high pp).
REFERENCE_TABLE = [
    (60, 1, 59, 0, None, 1.7, 0.0, 5.0),
    (30, 2, 26, 2, None, 0.0, -13.3, 13.3),
    (60, 5, 50, 5, None, 0.0, -10.0, 10.0),
    (164, 13, 138, 13, None, 0.0, -6.1, 6.1),
    (500, 40, 420, 40, None, 0.0, -3.6, 3.6),
    (60, 6, 52, 2, None, 6.7, -1.7, 16.7),
    (60, 8, 50, 2, None, 10.0, 0.0, 20.0),
    (500, 40, 440, 20, None, 4.0, 1.0, 7.0),
    (60, 8, 50, 2, 10, 10.0, 0.0, 30.0),
]


@pytest.mark.parametrize(
    "n, wins, ties, losses, cluster_size, mean_pp, low_pp, high_pp", REFERENCE_TABLE
)
def test_reference_table(
    n: int, wins: int, ties: int, losses: int, cluster_size: int | None,
    mean_pp: float, low_pp: float, high_pp: float,
) -> None:
    deltas = label_deltas(wins, ties, losses)
    assert len(deltas) == n
    clusters = None if cluster_size is None else [f"c{i // cluster_size}" for i in range(n)]
    result = paired_bootstrap(deltas, clusters)
    assert (result.resamples, result.seed, result.confidence) == (10_000, 7, 0.95)
    assert round(result.mean * 100, 1) == mean_pp
    assert round(result.low * 100, 1) == low_pp
    assert round(result.high * 100, 1) == high_pp
    assert result.n_items == n
    assert result.n_clusters == (n if cluster_size is None else n // cluster_size)


def test_reference_line_rendering() -> None:
    result = paired_bootstrap(label_deltas(6, 52, 2))
    assert result.line(unit="pp", scale=100) == "+6.7 pp [-1.7, +16.7]"
    assert paired_bootstrap(label_deltas(2, 26, 2)).line() == "+0.0 pp [-13.3, +13.3]"


def python_loop_means(sums: list[float], sizes: list[float], resamples: int, seed: int) -> list[float]:
    """The plainest cluster bootstrap: random.Random(seed).randrange per draw."""
    rng = random.Random(seed)
    c = len(sums)
    out = []
    for _ in range(resamples):
        picks = [rng.randrange(c) for _ in range(c)]
        out.append(sum(sums[i] for i in picks) / sum(sizes[i] for i in picks))
    return out


def test_index_draws_equal_a_plain_python_loop() -> None:
    rng = np.random.default_rng(3)
    deltas = rng.normal(size=90)
    keys = rng.integers(0, 23, size=90)  # unequal cluster sizes
    sums, sizes, _ = bs._cluster_totals(deltas, keys.tolist())
    expected = python_loop_means(sums.tolist(), sizes.tolist(), 700, seed=11)
    got = _means_by_index(sums, sizes, 700, np.random.Generator(bs._python_mt(11)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    result = paired_bootstrap(deltas, keys, resamples=700, seed=11)
    ordered = np.sort(expected)
    assert result.low == pytest.approx(ordered[int(np.ceil(700 * 0.025)) - 1], abs=1e-12)
    assert result.high == pytest.approx(ordered[int(np.ceil(700 * 0.975)) - 1], abs=1e-12)


@pytest.mark.parametrize("block", [3, 7, 25, 1000])
def test_index_draws_do_not_depend_on_block_size(block: int) -> None:
    rng = np.random.default_rng(4)
    sums = rng.integers(-3, 4, size=10).astype(float)
    sizes = rng.integers(1, 5, size=10).astype(float)
    reference = _means_by_index(sums, sizes, 300, np.random.Generator(bs._python_mt(5)))
    blocked = _means_by_index(sums, sizes, 300, np.random.Generator(bs._python_mt(5)), block)
    np.testing.assert_allclose(blocked, reference, rtol=1e-12)


def _uniform_over_types(sums, sizes, resamples, gen):  # a deliberately wrong sampler
    type_sums, type_sizes, _ = bs._types(sums, sizes)
    k = len(type_sums)
    counts = gen.multinomial(len(sums), np.full(k, 1.0 / k), size=resamples).astype(float)
    return (counts @ type_sums) / (counts @ type_sizes)


def test_type_collapse_matches_per_resample_loop_in_distribution() -> None:
    # 40 clusters of 7 distinct (sum, size) types with unequal multiplicities.
    pattern = [(2, 3), (0, 3), (-1, 2), (0, 1), (1, 1), (3, 4), (-2, 5)]
    mult = [12, 9, 6, 5, 4, 3, 1]
    sums = np.array([s for (s, _), m in zip(pattern, mult) for _ in range(m)], float)
    sizes = np.array([z for (_, z), m in zip(pattern, mult) for _ in range(m)], float)
    assert len(bs._types(sums, sizes)[0]) == 7

    loop_rng = np.random.default_rng(2024)
    loop = np.empty(6000)
    for b in range(len(loop)):
        idx = loop_rng.integers(0, len(sums), size=len(sums))
        loop[b] = sums[idx].sum() / sizes[idx].sum()
    collapsed = _means_by_types(
        *bs._types(sums, sizes), 20_000, np.random.Generator(bs._python_mt(9))
    )

    assert collapsed.mean() == pytest.approx(loop.mean(), abs=4 * loop.std() / np.sqrt(len(loop)))
    assert collapsed.std() == pytest.approx(loop.std(), rel=0.05)
    for q in (2.5, 50, 97.5):
        assert np.percentile(collapsed, q) == pytest.approx(np.percentile(loop, q), abs=0.02)
    assert sps.ks_2samp(collapsed, loop).pvalue > 1e-3
    # The same checks reject a sampler that forgets the multiplicities.
    wrong = _uniform_over_types(sums, sizes, 20_000, np.random.default_rng(1))
    assert sps.ks_2samp(wrong, loop).pvalue < 1e-6


def test_large_input_takes_the_type_path_and_agrees_with_index_draws() -> None:
    rng = np.random.default_rng(8)
    u = rng.random(20_000)
    deltas = np.where(u < 0.10, 1.0, np.where(u < 0.15, -1.0, 0.0))
    result = paired_bootstrap(deltas, resamples=2000)
    assert result.draw == "types"
    means = _means_by_index(deltas, np.ones(len(deltas)), 2000, np.random.default_rng(0))
    low, high = bs._percentile_bounds(means, 0.95)
    assert result.low == pytest.approx(low, abs=1e-3)
    assert result.high == pytest.approx(high, abs=1e-3)
    sd = deltas.std() / np.sqrt(len(deltas))
    assert result.low == pytest.approx(deltas.mean() - 1.96 * sd, abs=1e-3)


def test_small_input_takes_the_index_path() -> None:
    assert paired_bootstrap(label_deltas(8, 50, 2)).draw == "index"


def test_same_seed_same_result_and_seed_matters() -> None:
    rng = np.random.default_rng(5)
    deltas = rng.normal(0.05, 1.0, size=200)
    keys = rng.integers(0, 30, size=200)
    first = paired_bootstrap(deltas, keys, resamples=2000, seed=123)
    assert first == paired_bootstrap(deltas, keys, resamples=2000, seed=123)
    others = {
        (r.low, r.high)
        for r in (paired_bootstrap(deltas, keys, resamples=2000, seed=s) for s in range(1, 6))
    }
    assert len(others) > 1


def test_clustered_interval_is_wider_on_correlated_items() -> None:
    rng = np.random.default_rng(6)
    n_clusters, per = 20, 15
    effect = np.repeat(rng.normal(0.0, 0.5, size=n_clusters), per)
    deltas = effect + rng.normal(0.0, 0.2, size=n_clusters * per)
    keys = np.repeat([f"conv-{i}" for i in range(n_clusters)], per)
    flat = paired_bootstrap(deltas)
    clustered = paired_bootstrap(deltas, keys)
    assert clustered.mean == pytest.approx(flat.mean)
    assert clustered.high - clustered.low > 2 * (flat.high - flat.low)


def test_reference_clustered_row_is_wider_than_unclustered() -> None:
    deltas = label_deltas(8, 50, 2)
    flat = paired_bootstrap(deltas)
    clustered = paired_bootstrap(deltas, [f"c{i // 10}" for i in range(60)])
    assert clustered.high - clustered.low > flat.high - flat.low


def test_constant_deltas_and_single_cluster_give_a_point_interval() -> None:
    constant = paired_bootstrap([0.25] * 12)
    assert constant.low == constant.high == constant.mean == 0.25
    single = paired_bootstrap([1.0, 0.0, -1.0, 1.0], ["x"] * 4)
    assert single.n_clusters == 1
    assert single.low == single.high == pytest.approx(0.25)


def test_lower_confidence_gives_a_narrower_interval() -> None:
    deltas = label_deltas(20, 150, 10)
    wide = paired_bootstrap(deltas, confidence=0.99)
    narrow = paired_bootstrap(deltas, confidence=0.5)
    assert wide.low < narrow.low <= narrow.high < wide.high


def test_percentile_bounds_are_inverted_cdf_order_statistics() -> None:
    values = np.random.default_rng(7).normal(size=10_000)
    low, high = bs._percentile_bounds(values, 0.95)
    ordered = np.sort(values)
    assert (low, high) == (ordered[249], ordered[9749])
    expected = np.percentile(values, [2.5, 97.5], method="inverted_cdf")
    assert (low, high) == tuple(expected)


def test_line_formatting() -> None:
    result = BootstrapResult(
        mean=-0.0004, low=-0.02, high=0.01234, n_items=3, n_clusters=3,
        resamples=10, seed=7, confidence=0.95,
    )
    assert result.line() == "+0.0 pp [-2.0, +1.2]"
    assert result.line(unit="", scale=1.0, digits=3) == "+0.000 [-0.020, +0.012]"
    assert result.to_dict()["n_items"] == 3


@pytest.mark.parametrize(
    "deltas, clusters, message",
    [
        ([], None, "empty"),
        ([[1.0, 0.0]], None, "1-D"),
        ([1.0, float("nan"), 0.0], None, "NaN"),
        ([1.0, float("inf")], None, "NaN/inf"),
        ([1.0, 0.0, -1.0], ["a", "b"], "2 keys but deltas has 3"),
        ([1.0, 0.0, -1.0], np.array([1, 2]), "2 keys but deltas has 3"),
    ],
)
def test_bad_input_raises_value_error(deltas, clusters, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(deltas, clusters)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"resamples": 0}, "resamples"),
        ({"resamples": 2.5}, "resamples"),
        ({"seed": -1}, "seed"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
    ],
)
def test_bad_settings_raise_value_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap([1.0, 0.0], **kwargs)


def test_unhashable_cluster_key_raises_type_error() -> None:
    with pytest.raises(TypeError, match="hashable"):
        paired_bootstrap([1.0, 0.0], [["a"], ["b"]])


def test_type_draws_do_not_depend_on_block_size() -> None:
    types = bs._types(np.array([1.0, 0.0, -1.0, 2.0, 0.0]), np.array([1.0, 1.0, 1.0, 2.0, 3.0]))
    whole = _means_by_types(*types, 100, np.random.Generator(bs._python_mt(3)))
    blocked = _means_by_types(*types, 100, np.random.Generator(bs._python_mt(3)), block=12)
    np.testing.assert_array_equal(blocked, whole)


def test_one_stratum_draws_exactly_the_unstratified_interval() -> None:
    deltas = label_deltas(8, 50, 2)
    clusters = [f"c{i // 10}" for i in range(60)]
    plain = paired_bootstrap(deltas, clusters)
    one = paired_bootstrap(deltas, clusters, strata=["s"] * 60)
    assert (one.low, one.high, one.p_value) == (plain.low, plain.high, plain.p_value)


def test_strata_keep_their_cluster_counts() -> None:
    """Stratum x: 20 items all +1; stratum y: 40 items all 0. Each resample keeps 20 x-items
    of 60, so every resampled mean is exactly 1/3; without strata the mean varies."""
    deltas = [1.0] * 20 + [0.0] * 40
    strata = ["x"] * 20 + ["y"] * 40
    fixed = paired_bootstrap(deltas, strata=strata)
    assert fixed.low == fixed.high == pytest.approx(1 / 3) and fixed.n_strata == 2
    free = paired_bootstrap(deltas)
    assert free.low < 0.25 and free.high > 0.42


def test_a_cluster_across_strata_is_refused() -> None:
    with pytest.raises(ValueError, match="clusters must lie within one stratum"):
        paired_bootstrap([1.0, 0.0, 1.0], ["c1", "c1", "c2"], strata=["x", "y", "y"])
    with pytest.raises(ValueError, match="strata has 2 keys"):
        paired_bootstrap([1.0, 0.0, 1.0], strata=["x", "y"])


def test_p_value_is_the_two_sided_share_of_resampled_means() -> None:
    """The p-value, recomputed from the same resampled means by a plain loop; resamples
    exactly at zero (many here: 6 wins, 2 losses) count half on each side, as documented."""
    deltas = np.array(label_deltas(6, 52, 2))
    result = paired_bootstrap(deltas, resamples=2000, seed=3)
    totals, weights = bs._totals_by_index(deltas, np.ones(60), 2000, np.random.Generator(bs._python_mt(3)))
    means = totals / weights
    zero = sum(1 for m in means if m == 0)
    assert zero > 10
    below = sum(1 for m in means if m < 0) + zero / 2
    above = sum(1 for m in means if m > 0) + zero / 2
    assert result.p_value == pytest.approx(min(1.0, 2 * min(below, above) / 2000))
    assert paired_bootstrap([0.0] * 10).p_value == 1.0
