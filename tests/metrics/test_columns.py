"""Rows read as columns (memrun.metrics.columns), the way a run's summary reads them: a row
lacking a column reads as the default, whatever the other rows hold; and a latency's
p50 and p95 from one sorted copy are the floats percentile gives one at a time."""

from __future__ import annotations

import math
import random

import pytest

from memrun.metrics.columns import RowColumns, column, columns
from memrun.metrics.summary import percentile, percentiles


def test_a_column_reads_every_row_in_order_and_a_missing_value_as_the_default() -> None:
    rows = [{"a": 1, "b": "x"}, {"a": None, "b": "y"}, {"b": "z"}]
    assert column(rows, "b") == ["x", "y", "z"]
    assert column(rows, "a") == [1, None, None]  # the third row lacks it
    assert column(rows, "a", 0) == [1, None, 0]  # the default only where a row lacks the key
    assert column(rows, "nosuch") == [None, None, None]
    assert column([], "a") == []
    assert columns(rows, ["a", "b", "nosuch"]) == {"a": [1, None, None], "b": ["x", "y", "z"],
                                                   "nosuch": [None, None, None]}
    assert columns(rows[:2], ["b", "a"]) == {"b": ["x", "y"], "a": [1, None]}  # one pass, every row has both
    assert columns([], ["a", "b"]) == {"a": [], "b": []}


def test_row_columns_reads_each_column_once() -> None:
    reads = []

    class Row(dict):  # counts the reads of one column
        def __getitem__(self, key: str) -> object:
            reads.append(key)
            return dict.__getitem__(self, key)

    read = RowColumns([Row(label="correct", error=None), Row(label="wrong", error="boom")])
    assert read["label"] == ["correct", "wrong"]
    assert read["label"] is read["label"] and read["error"] == [None, "boom"]
    assert reads.count("label") == 2 and reads.count("error") == 2  # one read a row, however often asked
    assert read["nosuch"] == [None, None] and read.n == 2


def test_percentiles_are_percentile_at_each_q_to_the_bit() -> None:
    rng = random.Random(11)
    for n in [1, 2, 3, 10, 101, 2000]:
        values = [rng.choice([rng.expovariate(0.01), float(rng.randint(0, 3))]) for _ in range(n)]
        qs = (50, 95, 0, 100, 33.3)
        assert percentiles(values, qs) == [percentile(values, q) for q in qs]
    assert percentiles([], (50, 95)) == [None, None]
    assert all(math.isnan(v) for v in percentiles([1.0, float("nan")], (50, 95)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outside"):
        percentiles([1.0], (50, 101))
