"""Tests for memrun.stats.calibration."""

from __future__ import annotations

import json
import math

import pytest

from memrun.stats import paired_bootstrap
from memrun.stats.bootstrap import BootstrapResult
from memrun.stats.calibration import JudgeCalibration, correct_for_judge


def raw(mean: float, low: float, high: float) -> BootstrapResult:
    return BootstrapResult(mean, low, high, n_items=60, n_clusters=60, resamples=10_000,
                           seed=7, confidence=0.95)


def test_youden_j_and_its_variance() -> None:
    cal = JudgeCalibration(tpr=0.9, fpr=0.1, n_pos=100, n_neg=50)
    assert cal.youden_j == pytest.approx(0.8)
    assert cal.j_variance == pytest.approx(0.09 / 100 + 0.09 / 50)


def test_round_trip_through_json() -> None:
    cal = JudgeCalibration(tpr=0.92, fpr=0.07, n_pos=120, n_neg=118)
    text = json.dumps(cal.to_dict())
    assert JudgeCalibration.from_dict(json.loads(text)) == cal
    extra = {**cal.to_dict(), "judge_model": "gpt-4o-2024-08-06"}
    assert JudgeCalibration.from_dict(extra) == cal


@pytest.mark.parametrize(
    "data, message",
    [
        ({"tpr": 0.9, "fpr": 0.1, "n_pos": 10}, "missing"),
        ({"tpr": 1.2, "fpr": 0.1, "n_pos": 10, "n_neg": 10}, "tpr"),
        ({"tpr": 0.9, "fpr": math.nan, "n_pos": 10, "n_neg": 10}, "fpr"),
        ({"tpr": 0.9, "fpr": 0.1, "n_pos": 0, "n_neg": 10}, "n_pos"),
        ({"tpr": 0.9, "fpr": 0.1, "n_pos": 10, "n_neg": 2.5}, "n_neg"),
        ({"tpr": "0.9", "fpr": 0.1, "n_pos": 10, "n_neg": 10}, "tpr"),
    ],
)
def test_from_dict_rejects_bad_input(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeCalibration.from_dict(data)


def test_correction_by_hand() -> None:
    cal = JudgeCalibration(tpr=0.9, fpr=0.1, n_pos=100, n_neg=100)
    out = correct_for_judge(raw(0.10, 0.02, 0.20), cal)
    j, se_j, z = 0.8, math.sqrt(0.0018), 1.959963984540054
    judge_term = z * 0.10 * se_j / j**2  # 0.012993
    assert out.corrected and out.warning is None
    assert out.j == pytest.approx(j) and out.j_se == pytest.approx(se_j)
    assert out.mean == pytest.approx(0.125)
    assert out.low == pytest.approx(0.125 - math.sqrt(0.1**2 + judge_term**2))
    assert out.high == pytest.approx(0.125 + math.sqrt(0.125**2 + judge_term**2))
    assert (round(out.low, 5), round(out.high, 5)) == (0.02416, 0.25067)
    assert out.line() == "+12.5 pp [+2.4, +25.1]"


def test_calibration_widens_beyond_plain_rescaling() -> None:
    result = paired_bootstrap([1.0] * 40 + [-1.0] * 20 + [0.0] * 440)
    cal = JudgeCalibration(tpr=0.85, fpr=0.15, n_pos=40, n_neg=40)
    out = correct_for_judge(result, cal)
    j = cal.youden_j
    assert out.mean == pytest.approx(result.mean / j)
    assert out.low < result.mean / j - (result.mean - result.low) / j
    assert out.high > result.mean / j + (result.high - result.mean) / j


def test_perfect_judge_changes_nothing() -> None:
    out = correct_for_judge(raw(0.1, 0.0, 0.2), JudgeCalibration(1.0, 0.0, 50, 50))
    assert (out.mean, out.low, out.high) == (0.1, 0.0, 0.2)


@pytest.mark.parametrize("tpr, fpr", [(0.5, 0.5), (0.4, 0.6)])
def test_uninformative_judge_passes_inputs_through_with_a_warning(tpr: float, fpr: float) -> None:
    result = raw(0.1, 0.0, 0.2)
    out = correct_for_judge(result, JudgeCalibration(tpr, fpr, 30, 30))
    assert not out.corrected
    assert (out.mean, out.low, out.high) == (0.1, 0.0, 0.2)
    assert out.raw is result
    assert out.warning is not None and "J" in out.warning and "uncorrected" in out.warning


def test_noisy_judge_gets_a_warning_but_is_corrected() -> None:
    out = correct_for_judge(raw(0.1, 0.0, 0.2), JudgeCalibration(0.6, 0.45, 15, 15))
    assert out.corrected
    assert out.warning is not None and "unreliable" in out.warning


def test_to_dict_is_json_ready() -> None:
    out = correct_for_judge(raw(0.1, 0.0, 0.2), JudgeCalibration(0.9, 0.1, 10, 10))
    assert json.loads(json.dumps(out.to_dict()))["calibration"]["n_pos"] == 10
