"""memrun's own t quantile (no scipy import on a run's path) against scipy's."""

from __future__ import annotations

import pytest
from scipy import special

from memrun.stats.student_t import betainc, t_quantile


@pytest.mark.parametrize("df", [1.0, 1.0000001, 1.05, 1.5, 2.0, 2.7, 3.0, 5.0, 9.0, 17.3, 28.0, 100.0, 1e4, 1e6])
@pytest.mark.parametrize("q", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_agrees_with_scipy(df, q):
    assert t_quantile(df, q) == pytest.approx(float(special.stdtrit(df, q)), rel=1e-8)


@pytest.mark.parametrize(("a", "b", "x"), [(0.5, 0.5, 0.3), (4.5, 0.5, 0.9), (50.0, 0.5, 0.99), (2.0, 3.0, 0.0), (2.0, 3.0, 1.0)])
def test_betainc_agrees_with_scipy(a, b, x):
    assert betainc(a, b, x) == pytest.approx(float(special.betainc(a, b, x)), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize(("df", "q"), [(0.0, 0.975), (float("inf"), 0.975), (3.0, 0.5), (3.0, 1.0)])
def test_t_quantile_refuses_what_it_cannot_compute(df, q):
    with pytest.raises(ValueError):
        t_quantile(df, q)
