"""Tests for memrun.stats.small_clusters (CR2 + t(G-1)) and its coverage against the
percentile cluster bootstrap when clusters are few."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from memrun.stats import cr2_interval, paired_bootstrap


def test_singleton_clusters_give_the_one_sample_t_interval() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.05, 0.3, size=25)
    got = cr2_interval(d)
    low, high = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert (got.low, got.high) == pytest.approx((low, high))
    assert got.p_value == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue)
    assert (got.df, got.n_clusters, got.method) == (24.0, 25, "cr2_bm")


def test_cr2_by_hand_with_unequal_clusters() -> None:
    d = np.array([1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0])
    keys = ["a", "a", "b", "b", "b", "c", "c"]
    mean = d.mean()
    n = len(d)
    var = 0.0
    for k in "abc":
        idx = [i for i, x in enumerate(keys) if x == k]
        s = sum(d[i] - mean for i in idx)
        var += s**2 / (1 - len(idx) / n)
    se = np.sqrt(var) / n
    got = cr2_interval(d, keys)
    assert got.se == pytest.approx(se)
    # Bell-McCaffrey df by their definition: eigenvalues of G'MG (M = I - 11'/n), G's
    # column g = M's columns of cluster g summed, scaled by (1 - n_g/n)^(-1/2) / n.
    m = np.eye(n) - 1.0 / n
    g = np.stack([m[:, [i for i, x in enumerate(keys) if x == k]].sum(axis=1)
                  / np.sqrt(1 - keys.count(k) / n) / n for k in "abc"], axis=1)
    lam = np.linalg.eigvalsh(g.T @ g)
    df = lam.sum() ** 2 / (lam**2).sum()
    assert got.df == pytest.approx(df) and got.df < 2
    assert got.low == pytest.approx(mean - sps.t.ppf(0.975, df) * se)


def test_needs_two_clusters_and_finite_input() -> None:
    with pytest.raises(ValueError, match="at least 2 clusters"):
        cr2_interval([1.0, 0.0], ["x", "x"])
    with pytest.raises(ValueError, match="NaN"):
        cr2_interval([1.0, float("nan")])
    assert cr2_interval([1.0, 1.0, 1.0], ["a", "b", "c"]).p_value == 0.0  # every item won: se 0


def _simulated(rng: np.random.Generator, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired label deltas in clusters of unequal size with a cluster-level effect; the
    true mean delta is 0 (effects are symmetric around 0 and independent of size)."""
    sizes = rng.integers(5, 80, size=n_clusters)
    effects = rng.normal(0.0, 0.15, size=n_clusters)
    keys = np.repeat(np.arange(n_clusters), sizes)
    p_win = np.clip(0.15 + effects[keys], 0, 1)
    p_loss = np.clip(0.15 - effects[keys], 0, 1)
    u = rng.random(len(keys))
    return np.where(u < p_win, 1.0, np.where(u > 1 - p_loss, -1.0, 0.0)), keys


def test_coverage_with_eight_clusters_beats_the_percentile_bootstrap() -> None:
    """Simulation: 400 data sets of 8 clusters with true mean delta 0. The percentile cluster
    bootstrap under-covers (Cameron, Gelbach & Miller 2008); CR2 + t(7) stays near 95%."""
    rng = np.random.default_rng(2024)
    reps, cover_cr2, cover_boot = 400, 0, 0
    for r in range(reps):
        d, keys = _simulated(rng, 8)
        small = cr2_interval(d, keys)
        boot = paired_bootstrap(d, keys, resamples=1000, seed=r)
        cover_cr2 += small.low <= 0.0 <= small.high
        cover_boot += boot.low <= 0.0 <= boot.high
    assert 0.92 <= cover_cr2 / reps <= 0.99
    assert cover_boot / reps < 0.90
    assert cover_cr2 > cover_boot
