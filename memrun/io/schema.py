"""Columns of ``items.parquet``: one row per item x repeat.

The README's "Output schema" section documents the same columns for users; this module
is the definition the writer and reader use.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from memrun.metrics.retrieval import SESSION_PREFIX, metric_columns

_STR_LIST = pa.list_(pa.string())

BASE_COLUMNS: list[pa.Field] = [
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("repeat", pa.int32(), nullable=False),
    pa.field("cluster", pa.string()),
    pa.field("category", pa.string()),
    pa.field("category_label", pa.string()),
    pa.field("question", pa.string()),
    pa.field("question_date", pa.string()),
    pa.field("answer", pa.string()),
    pa.field("answer_raw", pa.string()),
    pa.field("gold_keys", _STR_LIST),
    pa.field("gold_keys_raw", _STR_LIST),
    pa.field("extra", pa.string()),
    pa.field("retrieved_keys", _STR_LIST),
    pa.field("retrieved_scores", pa.list_(pa.float64())),
    pa.field("n_retrieved", pa.int32()),
    pa.field("search_latency_ms", pa.float64()),
    pa.field("error", pa.string()),
    pa.field("gold_sessions", _STR_LIST),
    pa.field("abstention", pa.bool_()),
]


def _metric_type(name: str) -> pa.DataType:
    name = name.removeprefix(SESSION_PREFIX)
    if name == "first_gold_rank":
        return pa.int32()
    if name.startswith(("hit_", "all_")):
        return pa.bool_()
    return pa.float64()


def items_schema(ks: Iterable[int]) -> pa.Schema:
    """The table's schema for cut-offs ``ks`` (metric columns depend on them)."""
    metrics = [pa.field(c, _metric_type(c)) for c in metric_columns(ks)]
    return pa.schema(BASE_COLUMNS + metrics)
