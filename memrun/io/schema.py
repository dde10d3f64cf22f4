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
    pa.field("gold_texts", _STR_LIST),  # the text of each gold_keys record (null: the key names none)
    pa.field("extra", pa.string()),
    pa.field("retrieved_keys", _STR_LIST),
    pa.field("retrieved_scores", pa.list_(pa.float64())),
    pa.field("retrieved_texts", _STR_LIST),  # each hit's text as the arm returned it, in rank order
    pa.field("n_retrieved", pa.int32()),
    pa.field("search_latency_ms", pa.float64()),  # the search call itself (memrun.pipeline.many_histories)
    pa.field("search_queue_ms", pa.float64()),  # time it waited for a slot, a 429 or a backoff
    pa.field("error", pa.string()),
    pa.field("gold_sessions", _STR_LIST),
    pa.field("abstention", pa.bool_()),
    pa.field("gold_unreachable", pa.int32()),  # gold keys no record of the history can match (memrun.metrics.conventions)
]


# -- axis=accuracy (memrun.accuracy): null on retrieval-axis rows --------------------------
ACCURACY_COLUMNS: list[pa.Field] = [
    pa.field("reader_answer", pa.string()),
    pa.field("answer_source", pa.string()),  # reader | arm (an arm that answers itself)
    pa.field("label", pa.string()),  # correct | wrong | abstain | error (memrun.stats.labels)
    pa.field("judge_score", pa.float64()),  # 1/0 for LLM judges; the lexical score (e.g. F1); a rubric's mean
    pa.field("judge_explanation", pa.string()),
    pa.field("judge_prompt", pa.string()),  # the judge prompt file used for this item
    pa.field("answer_latency_ms", pa.float64()),  # the reader call that answered
    pa.field("context_tokens", pa.int64()),  # prompt tokens the API reported; null when none
    pa.field("completion_tokens", pa.int64()),  # completion tokens the API reported
    pa.field("judge_tokens", pa.int64()),  # judge prompt + completion tokens reported
    pa.field("context_dropped", pa.int32()),  # hits dropped to fit max_context_tokens
    pa.field("reader_cache_hit", pa.bool_()),
    pa.field("judge_cache_hit", pa.bool_()),
    pa.field("judge_retried", pa.bool_()),  # the label came from re-asking an unparseable reply (memrun.judges.retry)
    pa.field("failure_stage", pa.string()),  # missed items: memrun.metrics.failure.STAGES
    pa.field("judge2_label", pa.string()),  # the second judge, on its sample
    pa.field("judge2_explanation", pa.string()),
    pa.field("token_f1", pa.float64()),  # lexical_scores=true
    pa.field("bleu1", pa.float64()),
    pa.field("rouge_l", pa.float64()),
    pa.field("rubric_scores", pa.list_(pa.float64())),  # rubric judges: each rubric item's score (0, 0.5, 1)
    pa.field("order_f1", pa.float64()),  # rubric judges, event ordering: F1 of the aligned events
    pa.field("order_tau_norm", pa.float64()),  # (Kendall tau_b + 1) / 2; null when tau_b is undefined
    pa.field("order_score", pa.float64()),  # order_tau_norm x order_f1 (memrun.metrics.event_order)
    pa.field("stale", pa.bool_()),  # stale_check=true: wrong knowledge-update answer with the superseded value
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
    return pa.schema(BASE_COLUMNS + metrics + ACCURACY_COLUMNS)
