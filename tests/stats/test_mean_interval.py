"""A run's interval of a mean (memrun.stats.mean_interval): the gate's statistics, read or refused."""

from __future__ import annotations

import numpy as np
import pytest

from memrun.stats.gate import gate_interval
from memrun.stats.mean_interval import mean_interval, truncate


def test_with_many_clusters_the_bootstrap_alone_is_read():
    rng = np.random.default_rng(1)
    scores = (rng.random(600) < 0.5).astype(float)
    clusters = np.arange(600) % 60
    got = mean_interval(scores, clusters)
    gate = gate_interval(scores, clusters)
    assert got.method == "percentile_bootstrap" and (got.low, got.high) == (gate.low, gate.high) == got.bootstrap


@pytest.mark.parametrize("sizes", [[40] * 5, [100, 30, 20, 10], [7] * 12])
def test_with_few_clusters_it_is_the_gates_nominal_union(sizes):
    rng = np.random.default_rng(len(sizes))
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    scores = (rng.random(len(clusters)) < rng.uniform(0.2, 0.8, len(sizes))[clusters]).astype(float)
    got, gate = mean_interval(scores, clusters), gate_interval(scores, clusters)
    assert gate.consulted and got.unreadable is None
    assert (got.low, got.high) == pytest.approx((max(gate.low, 0.0), min(gate.high, 1.0)), abs=1e-9)


@pytest.mark.parametrize(("scores", "clusters", "why"), [
    ([1.0] * 30, list(range(30)), "same score"),
    ([0.0, 1.0] * 20, [0] * 40, "1 cluster(s)"),
    ([0.0, 1.0] * 75 + [1.0], [0] * 150 + [1], "2 cluster(s)"),
])
def test_an_interval_that_cannot_be_read_has_a_reason_and_no_bounds(scores, clusters, why):
    got = mean_interval(scores, clusters)
    assert got.low is None and got.high is None and why in (got.unreadable or "")


def test_truncation_keeps_the_bounds_in_the_parameter_space():
    assert truncate(-0.28, 1.08, -1.0, 1.0) == (-0.28, 1.0, True)
    assert truncate(-8.4, 12.1, -1.0, 1.0) == (-1.0, 1.0, True)
    assert truncate(0.2, 0.3, 0.0, 1.0) == (0.2, 0.3, False)
