"""A run's metrics from its rows: the one computation behind ``summary.json``, shared by a
run as it ends and by ``memrun merge`` over the rows of its shards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memrun.core.status import MAX_ERROR_SHARE
from memrun.lazy import lazy
from memrun.metrics.by_category import summarize_by_granularity
from memrun.metrics.conventions import run_counts
from memrun.metrics.intervals import category_intervals, retrieval_headline_metric
from memrun.metrics.summary import not_measurable

if TYPE_CHECKING:
    from memrun.metrics import accuracy as metrics_accuracy
else:
    metrics_accuracy = lazy("memrun.metrics.accuracy")


def summarize_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    axis: str,
    ks: Sequence[int],
    categories: Mapping[str, str],
    comparable_categories: Sequence[str] | None,
    task_averaged: bool,
    headline: str | None = None,
    unmeasurable: str | None = None,
    max_error_share: float = MAX_ERROR_SHARE,
    caveats: Mapping[str, Any] | None = None,
    top_k: int | None = None,
) -> dict[str, Any]:
    """The metrics of a run's rows (columns of :mod:`memrun.io.schema`), as ``summary.json`` holds them.

    axis ``recall``: :func:`memrun.metrics.by_category.summarize_by_granularity`;
    ``accuracy``: :func:`memrun.metrics.accuracy.summarize_accuracy` with ``headline``
    (the denominator verdicts read: ``accuracy_abstain_wrong`` or ``accuracy``), plus a
    ``retrieval`` block scored on each item's first repeat (retrieval runs once per item;
    only failed retrievals are left out). ``unmeasurable``: the reason the retrieval
    metrics cannot be measured; they are then null (:func:`memrun.metrics.summary.not_measurable`).
    ``top_k``: the run's ``arm.top_k`` (None: unbounded); cut-offs past it are null, so the
    retrieval headline is the first it measures (:func:`memrun.metrics.intervals.retrieval_headline_metric`).
    ``intervals``: the headline metric's 95% intervals (the cluster bootstrap, with the small-cluster t when clusters are few), overall and per
    category (:func:`memrun.metrics.intervals.category_intervals`; left out when not measurable).
    ``max_error_share``: the run's; past it the second judge's agreement is withheld
    (:func:`memrun.metrics.accuracy.judge2_block`).
    Raises ValueError for axis ``accuracy`` without ``headline``.
    ``caveats``: items credited by a convention, unreachable gold, empty searches
    (:func:`memrun.metrics.conventions.run_counts`; given, when the caller counted them
    already for the run's warnings, they are taken as they are).
    """
    counts = dict(caveats) if caveats is not None else run_counts(rows)
    def retrieval(part: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        summary = summarize_by_granularity(part, ks=ks, categories=categories,
                                           comparable_categories=comparable_categories, task_averaged=task_averaged)
        return not_measurable(summary, unmeasurable) if unmeasurable else summary

    if axis != "accuracy":
        summary = retrieval(rows)
        summary["caveats"] = counts
        if not unmeasurable:
            summary["intervals"] = category_intervals(rows, axis=axis, metric=retrieval_headline_metric(ks, top_k),
                                                      comparable_categories=comparable_categories)
        return summary

    if headline is None:
        raise ValueError("axis=accuracy: the summary needs headline, the denominator the verdicts read")
    items = metrics_accuracy.item_outcomes(rows)  # each item's majority label: the summary's and its intervals'
    summary = metrics_accuracy.summarize_accuracy(rows, categories=categories,
                                                  comparable_categories=comparable_categories,
                                                  denominator=headline, task_averaged=task_averaged,
                                                  max_error_share=max_error_share, items=items)
    first = [{**r, "error": None} if r["error"] is not None and r["retrieved_keys"] is not None else r
             for r in rows if r["repeat"] == 0]
    summary["retrieval"] = retrieval(first)
    summary["caveats"] = counts
    summary["intervals"] = category_intervals(rows, axis=axis, metric=summary["headline"]["metric"],
                                              comparable_categories=comparable_categories, items=items)
    return summary
