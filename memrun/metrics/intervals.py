"""95% intervals of a single run's headline metric, overall and per category.

The interval of a mean (:func:`memrun.stats.mean_interval.mean_interval`): the cluster
bootstrap of the per-item scores, clusters resampled together (the ``cluster`` column:
LoCoMo's conversations), seed 7, 10,000 resamples, joined by the nominal small-cluster t
interval when the clusters are effectively few, truncated to [0, 1]; an interval that
cannot be read (one or two clusters, nothing varies...) is recorded with its reason
(``unreadable``) and no bounds.
Per-item scores are those the comparison reads (:mod:`memrun.comparison.pairing`):

- accuracy axis: the item's majority label over repeats, correct 1, wrong 0, an
  abstention 0 under ``accuracy_abstain_wrong`` and left out under ``accuracy``;
  errored items are left out;
- retrieval axis: the headline metric's per-item column (``recall@5`` -> ``hit_at_5``)
  on items that did not error and have retrieval gold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from memrun.lazy import lazy
from memrun.metrics.beam_official import OFFICIAL_SCORE, item_official_scores
from memrun.metrics.columns import column
from memrun.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, majority_label
from memrun.stats.mean_interval import mean_interval

if TYPE_CHECKING:
    from memrun.metrics import retrieval as metrics_retrieval
else:
    metrics_retrieval = lazy("memrun.metrics.retrieval")

RETRIEVAL_HEADLINE = ("recall@5", "recall@10", "recall@1", "mrr")
"""The retrieval metric a run's headline reads: the first a run has (sweeps, reports, intervals)."""


def retrieval_headline_metric(ks: Sequence[int], top_k: int | None = None) -> str:
    """The first of :data:`RETRIEVAL_HEADLINE` a run with cut-offs ``ks`` and ``arm.top_k``
    ``top_k`` measures: a K past ``top_k`` is null in every row
    (:func:`memrun.metrics.retrieval.measured_ks`), so it is not the run's headline."""
    measured = metrics_retrieval.measured_ks(ks, top_k)
    for name in RETRIEVAL_HEADLINE:
        if "@" not in name or int(name.split("@")[1]) in measured:
            return name
    return "mrr"


def _interval(scores: list[float], clusters: list[Any], resamples: int, seed: int) -> dict[str, Any] | None:
    if not scores:
        return None
    keys = [str(c) if c is not None else f"\0item{i}" for i, c in enumerate(clusters)]  # null: its own cluster
    # Items sorted by cluster key: the bootstrap numbers clusters in order of appearance, so
    # the interval is the same whatever the row order (a merge of shards equals the whole run).
    order = sorted(range(len(keys)), key=keys.__getitem__)
    values = np.asarray(scores, dtype=float)[order]
    return mean_interval(values, [keys[i] for i in order], resamples=resamples, seed=seed).to_dict()


def item_scores(rows: Sequence[Mapping[str, Any]], *, axis: str, metric: str,
                items: Sequence[Mapping[str, Any]] | None = None) -> list[tuple[Any, Any, float]]:
    """``(category, cluster, score)`` per scored item (module docstring), in first-seen order.

    axis ``accuracy``: ``metric`` is the denominator (``accuracy_abstain_wrong`` or
    ``accuracy``), or ``mean_judge_score`` for a fractional judge (the item's mean
    ``judge_score`` over its non-error repeats); otherwise a retrieval metric name
    (:func:`memrun.metrics.retrieval.item_column_for`). ``items``: the rows'
    :func:`memrun.metrics.accuracy.item_outcomes` when the caller made them: their majority
    labels are read, not counted again (each item's category and cluster are its first row's
    either way).
    """
    if axis == "accuracy" and metric == OFFICIAL_SCORE:  # BEAM's official per-question score
        official = item_official_scores(rows)
        where = {str(r["item_id"]): r for r in rows}
        return [(where[k].get("category"), where[k].get("cluster"), v) for k, v in official.items()]
    if axis == "accuracy" and metric == "mean_judge_score":
        sums: dict[str, list[float]] = {}
        first_row: dict[str, Mapping[str, Any]] = {}
        for r in rows:
            key = str(r["item_id"])
            first_row.setdefault(key, r)
            if r.get("judge_score") is not None and r.get("label") not in (None, ERROR) and not r.get("error"):
                sums.setdefault(key, []).append(float(r["judge_score"]))
        return [(first_row[k].get("category"), first_row[k].get("cluster"), sum(v) / len(v)) for k, v in sums.items()]
    if axis == "accuracy":  # the majority label as memrun.metrics.accuracy.item_outcomes takes it
        first: dict[str, Mapping[str, Any]] = {}
        keys = map(str, map(itemgetter("item_id"), rows))
        if items is None:
            labels: dict[str, list[str]] = {}
            for key, label, r in zip(keys, column(rows, "label"), rows):
                if key in labels:
                    labels[key].append(label or ERROR)
                else:
                    labels[key], first[key] = [label or ERROR], r
            majorities = [(key, majority_label(item_labels)) for key, item_labels in labels.items()]
        else:  # the same items in the same (first-seen) order, their majorities made already
            for key, r in zip(keys, rows):
                if key not in first:
                    first[key] = r
            majorities = [(item["item_id"], item["majority"]) for item in items]
        out = []
        for key, majority in majorities:
            if majority == ERROR or (majority == ABSTAIN and metric == "accuracy"):
                continue
            out.append((first[key].get("category"), first[key].get("cluster"), 1.0 if majority == CORRECT else 0.0))
        return out

    name = metrics_retrieval.item_column_for(metric)
    return [(r.get("category"), r.get("cluster"), float(r[name])) for r in rows
            if r.get("error") is None and r.get(name) is not None and r.get("repeat", 0) == 0]


def category_intervals(
    rows: Sequence[Mapping[str, Any]],
    *,
    axis: str,
    metric: str,
    comparable_categories: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    items: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """95% intervals of ``metric``'s mean: ``overall_all``,
    ``overall_comparable`` (when ``comparable_categories``) and ``per_category``.

    Each block is :meth:`memrun.stats.mean_interval.MeanInterval.to_dict` (``mean``, ``low``,
    ``high``, ``n_items``, ``n_clusters``, ``method``, ``df``, ``bootstrap``, ``truncated``,
    ``unreadable``; fractions, ``low``/``high`` None when unreadable), None when no item is
    scored there. The settings are recorded beside them. ``items``: as :func:`item_scores` takes them.
    """
    scored = item_scores(rows, axis=axis, metric=metric, items=items)
    computed: dict[tuple[int, ...], dict[str, Any] | None] = {}  # blocks of the same items share one bootstrap

    def block(picked: tuple[int, ...]) -> dict[str, Any] | None:
        if picked not in computed:  # e.g. one category: overall_all, overall_comparable and it are the same items
            computed[picked] = _interval([scored[i][2] for i in picked], [scored[i][1] for i in picked], resamples, seed)
        found = computed[picked]
        return None if found is None else dict(found)

    of_category: dict[str, list[int]] = {}  # the items of each category (as text), in first-seen order
    for i, s in enumerate(scored):
        of_category.setdefault(str(s[0]), []).append(i)
    out: dict[str, Any] = {"metric": metric, "confidence": 0.95, "resamples": resamples, "seed": seed,
                           "cluster_by": "cluster", "overall_all": block(tuple(range(len(scored))))}
    if comparable_categories:
        wanted = set(comparable_categories)
        out["overall_comparable"] = block(tuple(i for i, s in enumerate(scored) if s[0] in wanted))
    out["per_category"] = {cat: block(tuple(picked)) for cat, picked in of_category.items()}
    return out
