"""Per-item scores of two runs, paired by item_id.

One score per item and arm, after collapsing repeats:

- retrieval axis: the per-item column behind ``metric`` (``recall@5`` -> ``hit_at_5``,
  a hit is 1 and a miss 0; ``mrr`` -> ``rr``, the reciprocal rank), read from the
  item's first non-errored repeat (retrieval runs once per item);
- accuracy axis: the majority label over repeats (:func:`memrun.stats.majority_label`:
  a tie is wrong; error only when every repeat errored); correct is 1, wrong 0, and an
  abstention is 0 under the ``correct+wrong+abstained`` denominator or left out under
  ``correct+wrong``.

Errored items are left out of both arms and counted, never scored as misses; so are
items without retrieval gold (unscored) and, under ``correct+wrong``, abstentions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memrun.errors import MemrunError
from memrun.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN
from memrun.io.reader import RunTable
from memrun.metrics.retrieval import item_column_for
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, flip_rate, is_stable, majority_label

LABEL_COLUMN = "label"


class CompareUsageError(MemrunError):
    """The comparison cannot be set up as asked (metric, cluster column, empty pairing)."""


@dataclass
class ArmScores:
    """One arm's per-item outcome after collapsing repeats.

    score: item_id -> score (float), or None when the item is left out.
    excluded: item_id -> why ("error", "unscored", "abstain") for items left out.
    stable: item_id -> whether every repeat gave the same label (True with one repeat).
    repeat_means: repeat index -> mean score over that repeat's scorable items (the
        per-seed means of a Wilcoxon test; repeats stand for seeds).
    flip_rate: share of repeated items whose labels disagree; None on the retrieval axis.
    """

    score: dict[str, float | None]
    excluded: dict[str, str]
    stable: dict[str, bool]
    cluster: dict[str, str]
    category: dict[str, str]
    category_label: dict[str, str]
    repeat_means: dict[int, float] = field(default_factory=dict)
    flip_rate: float | None = None


@dataclass
class Paired:
    """Items scored in both arms, aligned (arrays of shape (n,)), plus what was left out."""

    item_ids: list[str]
    a: np.ndarray
    b: np.ndarray
    clusters: list[str] | None
    categories: list[str]
    category_labels: dict[str, str]
    stable: np.ndarray
    only_a: list[str]
    only_b: list[str]
    excluded: dict[str, int]
    a_scores: ArmScores
    b_scores: ArmScores


def _columns(run: RunTable, names: list[str]) -> dict[str, list[Any]]:
    missing = [n for n in names if n not in run.table.column_names]
    if missing:
        raise CompareUsageError(f"{run.path}: no column {', '.join(missing)} in this run table")
    return {n: run.table.column(n).to_pylist() for n in names}


def arm_scores(run: RunTable, metric: str, cluster_by: str | None) -> ArmScores:
    """Collapse one run's rows into per-item scores (see the module docstring).

    Raises CompareUsageError for a metric the run has no column for, or a missing
    cluster column.
    """
    axis = run.instrument.axis
    base = ["item_id", "repeat", "error", "category", "category_label"]
    if cluster_by:
        base.append(cluster_by)
    if axis == "accuracy":
        cols = _columns(run, [*base, LABEL_COLUMN])
        return _accuracy_scores(run, cols, cluster_by)
    try:
        column = item_column_for(metric)
    except ValueError as exc:
        raise CompareUsageError(str(exc)) from exc
    if column not in run.table.column_names:
        ks = run.instrument.ks
        raise CompareUsageError(f"{run.path}: --metric {metric} needs column {column}; this run has cut-offs ks={ks}")
    cols = _columns(run, [*base, column])
    return _retrieval_scores(cols, column, cluster_by)


def _meta(cols: dict[str, list[Any]], i: int, cluster_by: str | None, out: ArmScores, item: str) -> None:
    out.cluster.setdefault(item, str(cols[cluster_by][i]) if cluster_by else item)
    out.category.setdefault(item, str(cols["category"][i]))
    out.category_label.setdefault(item, str(cols["category_label"][i]))


def _retrieval_scores(cols: dict[str, list[Any]], column: str, cluster_by: str | None) -> ArmScores:
    out = ArmScores({}, {}, {}, {}, {}, {})
    for i, item in enumerate(cols["item_id"]):
        _meta(cols, i, cluster_by, out, item)
        if out.score.get(item) is not None:
            continue  # retrieval runs once per item: the first usable repeat decides
        value = cols[column][i]
        if cols["error"][i] is not None:
            out.score.setdefault(item, None)
            out.excluded.setdefault(item, "error")
        elif value is None:
            out.score[item] = None
            out.excluded[item] = "unscored"
        else:
            out.score[item] = float(value)
            out.excluded.pop(item, None)
        out.stable[item] = True
    return out


def _accuracy_scores(run: RunTable, cols: dict[str, list[Any]], cluster_by: str | None) -> ArmScores:
    denominator = run.instrument.denominator
    if denominator not in (DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN):
        raise CompareUsageError(f"{run.path}: unknown accuracy denominator {denominator!r}")
    abstain_counts = denominator == DENOMINATOR_ABSTAIN_WRONG
    out = ArmScores({}, {}, {}, {}, {}, {})
    labels: dict[str, list[str]] = defaultdict(list)
    per_repeat: dict[int, list[float]] = defaultdict(list)
    for i, item in enumerate(cols["item_id"]):
        _meta(cols, i, cluster_by, out, item)
        label = ERROR if cols["error"][i] is not None else (cols[LABEL_COLUMN][i] or ERROR)
        labels[item].append(label)
        if label == CORRECT:
            per_repeat[int(cols["repeat"][i])].append(1.0)
        elif label != ERROR and (label != ABSTAIN or abstain_counts):
            per_repeat[int(cols["repeat"][i])].append(0.0)
    for item, item_labels in labels.items():
        majority = majority_label(item_labels)
        out.stable[item] = is_stable(item_labels)
        if majority == ERROR or (majority == ABSTAIN and not abstain_counts):
            out.score[item] = None
            out.excluded[item] = majority
        else:
            out.score[item] = 1.0 if majority == CORRECT else 0.0
    out.flip_rate = flip_rate(list(labels.values()))
    out.repeat_means = {r: float(np.mean(v)) for r, v in sorted(per_repeat.items()) if v}
    return out


def _reasons(scores: ArmScores) -> dict[str, int]:
    """How many items one arm left out, by reason (error, unscored, abstain)."""
    counts: dict[str, int] = defaultdict(int)
    for reason in scores.excluded.values():
        counts[reason] += 1
    return dict(counts)


def pair(a: RunTable, b: RunTable, *, metric: str, cluster_by: str | None,
         categories: list[str] | None = None) -> Paired:
    """Pair two runs by item_id on the items both scored (of ``categories``, when given).

    Raises CompareUsageError when no item is scored in both runs, or a category named
    in ``categories`` occurs in neither run.
    """
    sa, sb = arm_scores(a, metric, cluster_by), arm_scores(b, metric, cluster_by)
    if categories is not None:
        unknown = set(categories) - set(sa.category.values()) - set(sb.category.values())
        if unknown:
            present = ", ".join(sorted(set(sa.category.values())))
            raise CompareUsageError(f"--categories: no item has category {', '.join(sorted(unknown))}; present: {present}")
        keep_cats = set(categories)
        for scores in (sa, sb):
            scores.score = {i: v for i, v in scores.score.items() if scores.category[i] in keep_cats}
    only_a = sorted(set(sa.score) - set(sb.score))
    only_b = sorted(set(sb.score) - set(sa.score))
    excluded: dict[str, int] = defaultdict(int)
    keep: list[str] = []
    for item in sa.score:  # A's order: the dataset's order
        if item not in sb.score:
            continue
        reasons = {sa.excluded.get(item), sb.excluded.get(item)} - {None}
        if reasons:
            excluded["error" if "error" in reasons else sorted(reasons)[0]] += 1
            continue
        keep.append(item)
    if not keep:
        why = "; ".join(f"{side}: {n} {reason}" for side, scores in (("A", sa), ("B", sb))
                        for reason, n in sorted(_reasons(scores).items()))
        raise CompareUsageError(
            f"no item is scored in both runs ({len(only_a)} only in A, {len(only_b)} only in B, "
            f"{sum(excluded.values())} excluded{': ' + why if why else ''}); "
            + ("the runs share no item: check that both ran the same benchmark" if not excluded
               else "nothing is left to compare")
        )
    return Paired(
        item_ids=keep,
        a=np.array([sa.score[i] for i in keep], dtype=float),
        b=np.array([sb.score[i] for i in keep], dtype=float),
        clusters=[sa.cluster[i] for i in keep] if cluster_by else None,
        categories=[sa.category[i] for i in keep],
        category_labels={sa.category[i]: sa.category_label[i] for i in keep},
        stable=np.array([sa.stable[i] and sb.stable[i] for i in keep], dtype=bool),
        only_a=only_a,
        only_b=only_b,
        excluded=dict(excluded),
        a_scores=sa,
        b_scores=sb,
    )
