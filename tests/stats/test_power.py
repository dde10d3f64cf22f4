"""The minimum detectable effect against simulation: a true effect at the predicted MDE
passes memrun's gate in about 80% of runs."""

import numpy as np
import pytest

from memrun.stats.gate import gate_interval
from memrun.stats.power import minimum_detectable_effect, power_at, power_of
from memrun.stats.simulation import locomo_like, simulate


def test_mde_formula() -> None:
    assert minimum_detectable_effect(0.01, 1.96) == pytest.approx((1.96 + 0.8416) * 0.01, abs=1e-4)
    p = power_of(-0.02, 0.02, 2.0, effect=0.02, units="clusters", n_units=10)
    assert p.se == pytest.approx(0.01) and p.factor == pytest.approx((p.mde / 0.02) ** 2)
    assert p.needed == int(np.ceil(10 * p.factor))
    assert power_of(0.1, 0.1, 2.0, effect=0.02, units="items", n_units=5) is None


def test_predicted_power_matches_simulation() -> None:
    """Each run's own SE predicts the share of runs that pass: LoCoMo-like clusters, true
    +3.5 pp (about the MDE at ICC 0) and +5 pp at ICC 0.05."""
    design = locomo_like()
    clusters = design.cluster_codes()
    for icc, delta, seed in ((0.0, 0.035, 2), (0.05, 0.05, 3)):
        x = simulate(design, icc=icc, delta=delta, reps=300, rng=np.random.default_rng(seed))
        passed, predicted = [], []
        for r, d in enumerate(x):
            g = gate_interval(d, clusters, resamples=200, seed=r)
            df = g.small.df if g.decided == "cr2_bm" else None
            passed.append(g.low > 0)
            predicted.append(power_at(delta, (g.high - g.low) / (2 * g.crit), g.crit, df))
        assert np.mean(passed) == pytest.approx(np.mean(predicted), abs=0.07), (icc, delta)
