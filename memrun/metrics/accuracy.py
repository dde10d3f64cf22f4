"""Run-level summary of an accuracy run, from its item x repeat rows (no printing here).

Per item (over its repeats): the majority label (:func:`memrun.stats.labels.majority_label`:
a tie is wrong, error only when every repeat errored), whether the labels flipped, and
whether the retrieved keys were identical across repeats. Ratios are over items whose
majority label is not ``error`` (request failures are counted, never scored as misses):

- ``accuracy = correct / (correct + wrong)``;
- ``accuracy_abstain_wrong = correct / (correct + wrong + abstained)`` (an abstention
  counts against the arm; the default that verdicts read, see ``denominator``).

Beside them, as the measuring-results reference defines them: search and answer latency
p50/p95 (ms), mean context tokens sent to the reader (as the API reported them; null
when it reported none), success rate (rows that completed without error / all rows) and
the one-line score ``accuracy / p50 search ms / mean context tokens``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from memrun.core.status import MAX_ERROR_SHARE
from memrun.metrics.beam_official import OFFICIAL_SCORE, official_table
from memrun.metrics.columns import RowColumns, column, columns
from memrun.metrics.summary import percentiles
from memrun.stats.agreement import agreement, cohen_kappa
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, WRONG, flip_rate, is_stable, majority_label

Row = Mapping[str, Any]
LEXICAL = ("token_f1", "bleu1", "rouge_l")


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None  # exact sum: the same in any row order


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def item_outcomes(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One dict per item, in first-seen order: ``item_id``, ``category``, ``labels`` (by
    repeat), ``majority``, ``stable``, ``identical_retrieval`` (None with one repeat),
    ``judge_score`` and ``order_score`` (means over non-error repeats; a rubric judge's
fractional score, BEAM's event-ordering score), ``failure_stage`` (of the first repeat
    whose label is the majority) and ``rows`` (the item's rows by repeat)."""
    # Read as columns once, then each item's rows by their indices (memrun.metrics.columns).
    repeats = [int(v) for v in map(itemgetter("repeat"), rows)]
    grouped: dict[str, list[int]] = {}
    for i, item_id in enumerate(map(str, map(itemgetter("item_id"), rows))):
        if item_id in grouped:
            grouped[item_id].append(i)
        else:
            grouped[item_id] = [i]
    read = columns(rows, ("label", "judge_score", "order_score", "failure_stage", "retrieved_keys", "category"))
    label, judge_score, order_score = read["label"], read["judge_score"], read["order_score"]
    failure_stage, retrieved_keys, category = read["failure_stage"], read["retrieved_keys"], read["category"]
    any_order = any(v is not None for v in order_score)  # BEAM's event ordering only
    out = []
    for item_id, index in grouped.items():
        index.sort(key=repeats.__getitem__)  # by repeat (stable: rows of one repeat keep their order)
        labels = [label[i] or ERROR for i in index]
        majority = majority_label(labels)
        scores = [float(judge_score[i]) for i in index if judge_score[i] is not None and label[i] != ERROR]
        orders = [float(order_score[i]) for i in index
                  if order_score[i] is not None and label[i] != ERROR] if any_order else []
        missed = majority in (WRONG, ABSTAIN)  # only a missed item has a failure stage
        stage = next((failure_stage[i] for i in index if label[i] == majority), None) if missed else None
        out.append(
            {
                "item_id": item_id,
                "category": category[index[0]],
                "labels": labels,
                "majority": majority,
                "stable": is_stable(labels),
                "identical_retrieval": _identical_retrieval([retrieved_keys[i] for i in index]),
                "judge_score": _mean(scores),
                "order_score": _mean(orders),
                "failure_stage": stage,
                "rows": [rows[i] for i in index],
            }
        )
    return out


def _identical_retrieval(keys: Sequence[Any]) -> bool | None:
    """Whether an item's repeats (``keys``: their ``retrieved_keys``, by repeat) retrieved the
    same keys in the same order (None: one repeat, or no repeat retrieved anything, as with
    an arm that retrieves nothing). The repeats of an item retrieved once share its list (a
    run's rows): then without a tuple of each repeat's keys and a set of them (~1.5 us an item)."""
    if len(keys) < 2:
        return None
    first = keys[0]
    if first is None and all(k is None for k in keys):
        return None
    if all(k is first for k in keys):
        return True
    return len({tuple(k or ()) for k in keys}) == 1


def accuracy_block(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and ratios over items (outputs of :func:`item_outcomes`)."""
    counts = Counter(i["majority"] for i in items)
    correct, wrong, abstained = counts[CORRECT], counts[WRONG], counts[ABSTAIN]
    scores = [i["judge_score"] for i in items if i["majority"] != ERROR and i["judge_score"] is not None]
    orders = [i["order_score"] for i in items if i["majority"] != ERROR and i.get("order_score") is not None]
    extra = {"mean_order_score": _mean(orders), "n_order_scored": len(orders)} if orders else {}
    return {
        "n_items": len(items),
        "correct": correct,
        "wrong": wrong,
        "abstained": abstained,
        "errors": counts[ERROR],
        "accuracy": _ratio(correct, correct + wrong),
        "accuracy_abstain_wrong": _ratio(correct, correct + wrong + abstained),
        "mean_judge_score": _mean(scores),
        "flip_rate": _nan_to_none(flip_rate([i["labels"] for i in items])),
        **extra,
    }


def judge2_block(rows: Sequence[Row], max_error_share: float,
                 judge2_labels: Sequence[Any] | None = None) -> dict[str, Any] | None:
    """The second judge's agreement with the first over the rows it graded, or None when
    it graded none.

    The second judge never changes a label, so its errors are not the headline's (they do
    not count against the run's ``max_error_share``); they leave rows out of its agreement
    instead, so they are counted apart, with the denominator: ``n_rows`` (graded),
    ``n_compared`` (neither judge errored), ``n_errors`` (the second judge's own errors)
    and ``n_first_judge_errors`` (rows the first judge errored and the second did not).
    When more than ``max_error_share`` of the rows are left out, ``agreement`` and
    ``cohen_kappa`` are None and ``withheld`` says why (the rows compared need not be like
    the rest); else they are read on ``n_compared`` rows. ``judge2_labels``: the rows'
    ``judge2_label`` column when the caller read it already (:mod:`memrun.metrics.columns`)."""
    judge2_labels = column(rows, "judge2_label") if judge2_labels is None else judge2_labels
    graded = [r for r, label in zip(rows, judge2_labels) if label is not None]
    if not graded:
        return None
    second = [r for r in graded if r["judge2_label"] == ERROR]
    first = [r for r in graded if r["judge2_label"] != ERROR and r.get("label") in (None, ERROR)]
    pairs = [(r["label"], r["judge2_label"]) for r in graded if r["judge2_label"] != ERROR and r.get("label") not in (None, ERROR)]
    block: dict[str, Any] = {
        "n_rows": len(graded), "n_compared": len(pairs), "n_errors": len(second), "n_first_judge_errors": len(first),
        "agreement": None, "cohen_kappa": None, "withheld": None,
    }
    left_out = len(graded) - len(pairs)
    if left_out / len(graded) > max_error_share:
        block["withheld"] = (
            f"second judge errored on {len(second)} of {len(graded)} rows ({len(second) / len(graded):.0%})"
            + (f" and the first judge on {len(first)} more" if first else "")
            + f", more than max_error_share={max_error_share:g} of its rows: agreement not reported (it would rest "
              f"on the {len(pairs)} rows compared, which need not be like the rest); fix the cause and run again")
    elif pairs:
        a, b = [p[0] for p in pairs], [p[1] for p in pairs]
        block["agreement"], block["cohen_kappa"] = agreement(a, b), _nan_to_none(cohen_kappa(a, b))
    return block


def judge2_text(block: Mapping[str, Any]) -> str:
    """The second judge's line: ``second judge: agreement 95.0% on 95 of 100 rows (5 errored:
    second judge 4, first judge 1), Cohen's kappa 0.871``, or why its agreement is withheld
    (``second judge errored on 27 of 30 rows (90%), more than max_error_share=0.1 ...``)."""
    if block.get("withheld"):
        return str(block["withheld"])
    left_out = block["n_rows"] - block["n_compared"]
    share = "-" if block.get("agreement") is None else f"{100 * block['agreement']:.1f}%"
    kappa = "-" if block.get("cohen_kappa") is None else f"{block['cohen_kappa']:.3f}"
    return (f"second judge: agreement {share} on {block['n_compared']} of {block['n_rows']} rows ({left_out} errored: "
            f"second judge {block['n_errors']}, first judge {block.get('n_first_judge_errors', 0)}), "
            f"Cohen's kappa {kappa}")


def summarize_accuracy(
    rows: Sequence[Row],
    *,
    categories: Mapping[str, str],
    comparable_categories: Sequence[str] | None,
    denominator: str,
    task_averaged: bool = False,
    max_error_share: float = MAX_ERROR_SHARE,
    items: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Summary of an accuracy run (see the module docstring).

    rows: item x repeat rows (:mod:`memrun.io.schema` columns). denominator: the ratio
    the verdicts read (``accuracy_abstain_wrong`` or ``accuracy``); it is named in
    ``headline``. Returns counts, ``overall_all``, ``overall_comparable`` (when
    ``comparable_categories``), ``per_category``, latency percentiles (ms), token means,
    ``success_rate``, ``failure_stages``, ``judge2`` agreement (:func:`judge2_block`, withheld
    past ``max_error_share``), ``lexical`` means, ``stale``
    (and ``beam_official``, BEAM's official table, when rows carry rubric scores; with
    ``denominator`` ``official_score`` its ten-ability mean is the headline)
    (rows the stale check applied to, and how many were stale) and ``score``; with
    ``task_averaged``, ``category_averaged``: the mean over categories of the accuracies,
    the mean judge score and the mean order score. ``items``: the rows' :func:`item_outcomes`
    when the caller made them (a run's summary reads them for its intervals too).
    """
    items = item_outcomes(rows) if items is None else items
    overall = accuracy_block(items)
    read = RowColumns(rows)  # each column read once, in C
    n_row_errors = sum(1 for v in read["label"] if v in (None, ERROR))

    def block(part: list[dict[str, Any]]) -> dict[str, Any]:
        # a slice holding every item (one category; every category comparable) has overall's figures
        return dict(overall) if len(part) == len(items) else accuracy_block(part)

    summary: dict[str, Any] = {
        "n_items": len(items),
        "n_rows": len(rows),
        "n_row_errors": n_row_errors,
        "overall_all": overall,
    }
    if comparable_categories:
        keep = set(comparable_categories)
        summary["overall_comparable"] = block([i for i in items if i["category"] in keep])
        summary["comparable_categories"] = list(comparable_categories)
    present = {i["category"] for i in items}
    order = [c for c in categories if c in present] + sorted(str(c) for c in present if c not in categories)
    summary["per_category"] = {
        str(cat): {"label": categories.get(cat, str(cat)), **block([i for i in items if i["category"] == cat])}
        for cat in order
    }
    if task_averaged:  # the mean over categories, each weighing the same (BEAM's and LongMemEval's reports)
        blocks = list(summary["per_category"].values())
        summary["category_averaged"] = {
            name: _mean([b[name] for b in blocks if b.get(name) is not None]) if any(b.get(name) is not None for b in blocks)
            else None for name in ("accuracy", "accuracy_abstain_wrong", "mean_judge_score", "mean_order_score")
        }
    official = official_table(rows, list(categories), read["rubric_scores"])
    if official is not None:  # BEAM: the official table, recomputed from the rubric rows
        summary["beam_official"] = official
    if denominator == OFFICIAL_SCORE:  # benchmark.preset=official: the ten-ability mean is the headline
        value = official["ten_ability_mean"] if official else None
        summary["headline"] = {"metric": OFFICIAL_SCORE, "slice": "beam_official.ten_ability_mean", "value": value}
        head = {OFFICIAL_SCORE: value}
    else:
        head = summary.get("overall_comparable") or summary["overall_all"]
        summary["headline"] = {"metric": denominator, "slice": "overall_comparable" if "overall_comparable" in summary else "overall_all", "value": head[denominator]}
    identical = [i["identical_retrieval"] for i in items if i["identical_retrieval"] is not None]
    summary["identical_retrieval_share"] = _ratio(sum(identical), len(identical))

    first = [i["rows"][0] for i in items]
    search = [float(v) for v in column(first, "search_latency_ms") if v is not None]
    answer = [float(v) for v in read["answer_latency_ms"] if v is not None]
    context = [int(v) for v in read["context_tokens"] if v is not None]
    completion = [int(v) for v in read["completion_tokens"] if v is not None]
    search_p50, search_p95 = percentiles(search, (50, 95))
    answer_p50, answer_p95 = percentiles(answer, (50, 95))
    summary["search_latency_ms"] = {"p50": search_p50, "p95": search_p95}
    summary["answer_latency_ms"] = {"p50": answer_p50, "p95": answer_p95}
    summary["context_tokens"] = {"mean": _mean(context), "n_reported": len(context)}
    summary["completion_tokens"] = {"mean": _mean(completion), "n_reported": len(completion)}
    summary["success_rate"] = _ratio(len(rows) - n_row_errors, len(rows))  # rows whose label is not an error
    summary["failure_stages"] = dict(Counter(i["failure_stage"] for i in items if i["failure_stage"]))
    summary["judge2"] = judge2_block(rows, max_error_share, read["judge2_label"])
    checked = [v for v in read["stale"] if v is not None]
    summary["stale"] = {"n_checked": len(checked), "n_stale": sum(checked)} if checked else None
    lexical = {name: _mean([float(v) for v in read[name] if v is not None]) for name in LEXICAL}
    summary["lexical"] = lexical if any(v is not None for v in lexical.values()) else None
    summary["score"] = score_line(head[denominator], summary["search_latency_ms"]["p50"], summary["context_tokens"]["mean"])
    return summary


def score_line(accuracy: float | None, p50_search_ms: float | None, mean_context_tokens: float | None) -> str:
    """``accuracy / p50 search ms / mean context tokens``, e.g. ``86.0% / 145ms / 1823tok`` (``-`` when unknown)."""
    acc = "-" if accuracy is None else f"{100 * accuracy:.1f}%"
    ms = "-" if p50_search_ms is None else f"{p50_search_ms:.0f}ms"
    tok = "-" if mean_context_tokens is None else f"{mean_context_tokens:.0f}tok"
    return f"{acc} / {ms} / {tok}"
