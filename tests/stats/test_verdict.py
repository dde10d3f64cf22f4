"""Tests for memrun.stats.verdict."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from memrun.stats import paired_bootstrap
from memrun.stats.verdict import (
    DEFAULT_BAND,
    ExitCode,
    GateVerdict,
    band_from_null,
    decide,
)


@dataclass(frozen=True)
class Bounds:
    low: float
    high: float


def test_exit_codes_are_fixed() -> None:
    assert [(c.name, int(c)) for c in ExitCode] == [
        ("PASS", 0), ("FAIL", 1), ("UNRESOLVED", 2), ("REFUSAL", 3), ("USAGE_ERROR", 4),
    ]
    assert DEFAULT_BAND == 0.04


@pytest.mark.parametrize(
    "low, high, min_delta, band, outcome, reason, code",
    [
        (0.01, 0.07, 0.0, 0.04, "pass", "lower_bound_above_threshold", 0),
        (0.0, 0.20, 0.0, 0.04, "unresolved", "underpowered", 2),  # only reaches zero
        (1e-12, 0.20, 0.0, 0.04, "pass", "lower_bound_above_threshold", 0),
        (-0.09, -0.01, 0.0, 0.04, "fail", "upper_bound_below_threshold", 1),
        (-0.09, 0.0, 0.0, 0.04, "unresolved", "underpowered", 2),  # high == threshold
        (-0.036, 0.036, 0.0, 0.04, "unresolved", "inside_null_band", 2),
        (-0.04, 0.04, 0.0, 0.04, "unresolved", "inside_null_band", 2),  # band inclusive
        (-0.041, 0.03, 0.0, 0.04, "unresolved", "underpowered", 2),
        (-0.017, 0.167, 0.0, 0.04, "unresolved", "underpowered", 2),
        (-0.015, 0.02, -0.02, 0.04, "pass", "lower_bound_above_threshold", 0),  # non-inferiority
        (-0.08, -0.03, -0.02, 0.04, "fail", "upper_bound_below_threshold", 1),
        (0.01, 0.06, 0.02, 0.04, "unresolved", "underpowered", 2),
        (0.01, 0.03, 0.02, 0.04, "unresolved", "inside_null_band", 2),
        (0.0, 0.0, 0.0, 0.0, "unresolved", "degenerate_interval", 2),  # zero width never decides
        (0.12, 0.12, 0.0, 0.04, "unresolved", "degenerate_interval", 2),
    ],
)
def test_decide(low, high, min_delta, band, outcome, reason, code) -> None:
    verdict = decide(Bounds(low, high), min_delta=min_delta, band=band)
    assert (verdict.outcome, verdict.reason, int(verdict.exit_code)) == (outcome, reason, code)
    assert (verdict.min_delta, verdict.band, verdict.low, verdict.high) == (min_delta, band, low, high)
    assert verdict.passed is (outcome == "pass")
    assert verdict.to_dict()["exit_code"] == code


@pytest.mark.parametrize(
    "wins, ties, losses, outcome, reason",
    [
        (8, 50, 2, "unresolved", "underpowered"),  # +0.0 .. +20.0: not a pass
        (40, 440, 20, "pass", "lower_bound_above_threshold"),
        (40, 420, 40, "unresolved", "inside_null_band"),
        (2, 26, 2, "unresolved", "underpowered"),
        (2, 50, 8, "unresolved", "underpowered"),
        (20, 440, 40, "fail", "upper_bound_below_threshold"),
    ],
)
def test_decide_on_reference_rows(wins, ties, losses, outcome, reason) -> None:
    deltas = [1.0] * wins + [-1.0] * losses + [0.0] * ties
    verdict = decide(paired_bootstrap(deltas))
    assert (verdict.outcome, verdict.reason) == (outcome, reason)


@pytest.mark.parametrize(
    "kwargs, bounds, message",
    [
        ({"band": -0.01}, (0.0, 0.1), "band"),
        ({"band": float("nan")}, (0.0, 0.1), "finite"),
        ({"min_delta": float("inf")}, (0.0, 0.1), "finite"),
        ({}, (0.2, 0.1), "inverted"),
        ({}, (float("nan"), 0.1), "finite"),
    ],
)
def test_decide_rejects_bad_input(kwargs, bounds, message) -> None:
    with pytest.raises(ValueError, match=message):
        decide(Bounds(*bounds), **kwargs)


def test_band_from_null_is_the_wider_side() -> None:
    assert band_from_null(Bounds(-0.133, 0.1)) == 0.133
    assert band_from_null(Bounds(-0.02, 0.05)) == 0.05
    assert band_from_null(Bounds(0.01, 0.03)) == 0.03
    null = paired_bootstrap([1.0] * 2 + [-1.0] * 2 + [0.0] * 26)
    assert band_from_null(null) == pytest.approx(0.1333, abs=1e-3)
    with pytest.raises(ValueError, match="finite"):
        band_from_null(Bounds(float("nan"), 0.1))


def test_verdict_is_frozen() -> None:
    verdict = decide(Bounds(0.01, 0.02))
    assert isinstance(verdict, GateVerdict)
    with pytest.raises(AttributeError):
        verdict.outcome = "fail"  # type: ignore[misc]
