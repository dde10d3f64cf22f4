"""Per-category, task-averaged and overall figures, and their rendering."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from rich.console import Console

from memrun.metrics.by_category import mean_by_category, task_average
from memrun.metrics.summary import percentile
from memrun.report.by_category import mean_by_category_table


def _row(category: str, correct: float | None, abstention: bool = False, error: str | None = None) -> dict:
    return {"category": category, "correct": correct, "abstention": abstention, "error": error}


ROWS = [
    _row("a", 1), _row("a", 0), _row("a", 1), _row("a", 1, abstention=True),  # a: 3/4
    _row("b", 0), _row("b", 0, abstention=True),  # b: 0/2
    _row("a", 1, error="search: timeout"), _row("b", None),  # left out
]


def test_mean_by_category_as_the_official_script() -> None:
    result = mean_by_category(ROWS, "correct", {"b": "bee", "a": "ay"})
    assert list(result["per_category"]) == ["b", "a"]  # the configured order
    assert result["per_category"]["a"] == {"label": "ay", "n": 4, "mean": 0.75}
    assert result["per_category"]["b"] == {"label": "bee", "n": 2, "mean": 0.0}
    assert result["task_averaged"] == pytest.approx((0.75 + 0.0) / 2)
    assert result["overall"] == pytest.approx(3 / 6)
    assert result["abstention"] == {"n": 2, "mean": 0.5}
    assert result["n_left_out"] == 2


def test_task_average_skips_unscored_categories() -> None:
    per_category = {
        "a": {"label": "a", "n_items": 3, "n_scored": 2, "recall@5": 1.0, "mrr": 0.5},
        "b": {"label": "b", "n_items": 9, "n_scored": 8, "recall@5": 0.5, "mrr": 0.25},
        "c": {"label": "c", "n_items": 2, "n_scored": 0, "recall@5": None, "mrr": None},
    }
    assert task_average(per_category) == {"n_categories": 2, "recall@5": 0.75, "mrr": 0.375}
    assert task_average({}) == {"n_categories": 0}


def test_rendered_table_has_every_row() -> None:
    console = Console(record=True, width=100)
    console.print(mean_by_category_table(mean_by_category(ROWS, "correct"), "judged accuracy"))
    text = console.export_text()
    for expected in ("a ", "75.0", "task_averaged", "37.5", "overall", "50.0", "abstention", "2 items left out"):
        assert expected in text


def test_percentile_is_numpys_linear_percentile_to_the_bit() -> None:
    """metrics.summary.percentile computes np.percentile's default (linear) value in Python, so
    that a run's summary does not import numpy.ma: the same float for every size, tie and q,
    NaN when a value is NaN, None when empty, and q outside [0, 100] refused."""
    rng = random.Random(5)
    for n in [1, 2, 3, 4, 5, 7, 10, 99, 100, 101, 1000, 2001]:
        for _ in range(20):
            values = [rng.choice([rng.random() * 1000, rng.expovariate(0.01), float(rng.randint(0, 5)),
                                  rng.uniform(-1e-3, 1e-3)]) for _ in range(n)]
            for q in [0, 1, 5, 25, 33.3, 50, 66.7, 90, 95, 99, 99.9, 100]:
                expected = float(np.percentile(np.asarray(values, dtype=float), q))
                assert percentile(values, q) == expected, (n, q)
    assert percentile([1, 2, 3, 10], 50) == float(np.percentile([1, 2, 3, 10], 50))  # ints
    assert math.isnan(percentile([1.0, float("nan"), 3.0], 50))
    assert percentile([], 50) is None
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], 101)
