"""BEAM's official score table, from a run's rubric rows (``benchmark=beam benchmark.preset=official``).

Source: ``src/evaluation/compute_metrics.py`` (``evaluate_*``) and
``src/evaluation/report_results.py`` (``report_llms_accuracies``) of GitHub
``mohammadtavakoli78/BEAM`` at commit ``b2a3ee8b``. Per question, the official code sums
``int(score)`` over the rubric items and divides by their number (a 0.5 counts 0), except
for event ordering, whose column is ``tau_norm`` (Kendall tau_b of the aligned events,
(tau_b + 1) / 2), not the rubric mean nor ``tau_norm x F1``. Per chat, an ability's value
is the mean over its questions; the table averages each ability over the chats. BEAM's
tables then report the mean of the ten ability columns (the *ten-ability mean*).

memrun's rows keep every rubric item's score (``rubric_scores``) and the order scores
(``order_tau_norm``), so the official values are recomputed from them, question by
question (:func:`official_item_score`); a question's value over repeats is its mean.
Questions whose every repeat errored are left out and counted (the official code would
have scored them, having repaired the judge's JSON).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from memrun.metrics.columns import column

OFFICIAL_SCORE = "official_score"
"""The summary's name of an item's official BEAM score, and of its means."""
ORDER_ABILITY = "event_ordering"
ERROR_LABEL = "error"


def official_item_score(row: Mapping[str, Any]) -> float | None:
    """One row's official score: ``order_tau_norm`` for event ordering, else the mean of
    ``int(s)`` over ``rubric_scores``; None for an error row or a row without them."""
    if row.get("label") in (None, ERROR_LABEL) or row.get("error"):
        return None
    if row.get("category") == ORDER_ABILITY:
        tau = row.get("order_tau_norm")
        return None if tau is None else float(tau)
    scores = row.get("rubric_scores")
    if not scores:
        return None
    return sum(int(s) for s in scores) / len(scores)


def truncated(row: Mapping[str, Any]) -> bool:
    """Whether the official truncation changed this row's score (a 0.5 among its rubric scores)."""
    return row.get("category") != ORDER_ABILITY and any(float(s) == 0.5 for s in row.get("rubric_scores") or ())


def item_official_scores(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """item_id -> its official score, the mean over its scored repeats (items with none absent)."""
    per_item: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        score = official_item_score(row)
        if score is not None:
            per_item[str(row["item_id"])].append(score)
    return {item: math.fsum(v) / len(v) for item, v in per_item.items()}


def official_table(rows: Sequence[Mapping[str, Any]], abilities: Sequence[str],
                   rubric_scores: Sequence[Any] | None = None) -> dict[str, Any] | None:
    """The official table of a BEAM run: ``per_ability`` (ability -> mean over chats of the
    chat's mean over its questions), ``ten_ability_mean`` (their mean; None unless every
    listed ability has a value), ``n_items`` scored, ``n_unscored`` (every repeat errored),
    ``n_rows_truncated`` (rows whose 0.5s the official rule turned to 0). None when no row
    carries rubric scores (not a rubric-judged run). ``rubric_scores``: the rows' column of
    them when the caller read it already (:mod:`memrun.metrics.columns`)."""
    if not any(column(rows, "rubric_scores") if rubric_scores is None else rubric_scores):
        return None
    scores = item_official_scores(rows)
    meta: dict[str, tuple[str, str]] = {}
    for row in rows:
        meta.setdefault(str(row["item_id"]), (str(row.get("category")), str(row.get("cluster"))))
    by_ability_chat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item, score in scores.items():
        ability, chat = meta[item]
        by_ability_chat[ability][chat].append(score)
    per_ability: dict[str, float | None] = {}
    for ability in [*abilities, *sorted(set(by_ability_chat) - set(abilities))]:
        chats = by_ability_chat.get(ability)
        per_ability[ability] = (math.fsum(math.fsum(v) / len(v) for v in chats.values()) / len(chats)) if chats else None
    values = [per_ability[a] for a in abilities]
    return {
        "per_ability": per_ability,
        "ten_ability_mean": math.fsum(values) / len(values) if values and None not in values else None,  # type: ignore[arg-type]
        "n_items": len(scores),
        "n_unscored": len(meta) - len(scores),
        "n_rows_truncated": sum(1 for r in rows if official_item_score(r) is not None and truncated(r)),
        "source": "BEAM src/evaluation/report_results.py @ b2a3ee8b: int(score) per rubric item, tau_norm for "
                  "event_ordering, ability = mean over chats",
    }
