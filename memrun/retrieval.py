"""The retrieval stage, shared by both axes: ingest a history, search each item, make its row.

An arm's failure on one history or item is recorded on the item (``error``) and excluded
from every metric; an :class:`~memrun.errors.ArmError` (a misconfigured arm, or one that
breaks the protocol, e.g. returns something other than :class:`~memrun.records.Hit`)
stops the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import Any

from memrun.arms import BYPASS_MODES, Arm
from memrun.errors import ArmError
from memrun.metrics.retrieval import SESSION_PREFIX, item_columns, score_item, score_sessions
from memrun.records import Dataset, GoldMatch, Group, Hit, Item, gold_matches


@dataclass(frozen=True)
class Retrieved:
    """One item after retrieval: its hits (None when retrieval failed), search latency in
    ms, the retrieval error, the arm's own answer when the arm answers itself, and its
    group's record -> session map (for session gold)."""

    item: Item
    hits: list[Hit] | None
    latency_ms: float | None
    error: str | None
    arm_answer: str | None = None
    session_of: Mapping[str, str | None] = field(default_factory=dict)  # record key -> session (session gold)


def make_row(run_id: str, item: Item, dataset: Dataset, hits: list[Hit] | None, latency_ms: float | None,
         error: str | None, ks: Sequence[int], session_of: dict[str, str | None]) -> dict[str, Any]:
    scores = session_scores = None
    if hits is not None and item.gold_keys:
        matches = [gold_matches(h, item.gold_keys, dataset.gold_match) for h in hits]
        scores = score_item(matches, len(set(item.gold_keys)), ks)
    if hits is not None and item.gold_sessions:
        session_scores = score_sessions([h.key for h in hits], session_of, item.gold_sessions, ks)
    return {
        "run_id": run_id,
        "item_id": item.item_id,
        "repeat": 0,
        "cluster": item.cluster,
        "category": item.category,
        "category_label": dataset.categories.get(item.category, item.category),
        "question": item.question,
        "question_date": item.question_date,
        "answer": item.answer,
        "answer_raw": item.answer_raw,
        "gold_keys": list(item.gold_keys),
        "gold_keys_raw": list(item.gold_keys_raw),
        "extra": json.dumps(item.extra, ensure_ascii=False) if item.extra else None,
        "retrieved_keys": None if hits is None else [h.key for h in hits],
        "retrieved_scores": None if hits is None else [h.score for h in hits],
        "n_retrieved": None if hits is None else len(hits),
        "search_latency_ms": latency_ms,
        "error": error,
        "gold_sessions": list(item.gold_sessions),
        "abstention": item.abstention,
        **item_columns(scores, ks),
        **item_columns(session_scores, ks, SESSION_PREFIX),
    }


def arm_checks(rows: Sequence[dict[str, Any]], history_sizes: Mapping[str, int], top_k: int,
               search_mode: str | None) -> tuple[dict[str, int], list[str]]:
    """Count the items whose ranking is not a top-k retrieval, and say so once each.

    rows: the run's rows (repeat 0 is counted); history_sizes: item_id -> records in its
    history (items missing from it are not counted there).
    ``over_top_k``: items whose arm returned more than ``top_k`` hits.
    ``history_within_top_k``: items whose history has at most ``top_k`` records, so
    retrieval is bypassed (any arm may return the whole history). Arms whose
    ``search_mode`` is in :data:`memrun.arms.BYPASS_MODES` get one line saying so instead.
    Errored rows are not counted. Returns (counts, warning lines).
    """
    done = [r for r in rows if r.get("error") is None and not r.get("repeat")]
    counts = {
        "over_top_k": sum(1 for r in done if (r["n_retrieved"] or 0) > top_k),
        "history_within_top_k": sum(1 for r in done if history_sizes.get(r["item_id"], top_k + 1) <= top_k),
    }
    if search_mode in BYPASS_MODES:
        return counts, [f"search_mode={search_mode} does not rank: its retrieval figures are not a retrieval result"]
    warnings = []
    if counts["over_top_k"]:
        warnings.append(f"the arm returned more than top_k={top_k} hits on {counts['over_top_k']} of {len(done)} items")
    if counts["history_within_top_k"]:
        warnings.append(
            f"top_k={top_k} >= the number of records in the history for {counts['history_within_top_k']} of "
            f"{len(done)} items: retrieval is bypassed there"
        )
    return counts, warnings


def sessions_of(group: Group) -> dict[str, str | None]:
    """Record key -> session, when an item of the group has session gold (else empty)."""
    return {r.key: r.session for r in group.records} if any(i.gold_sessions for i in group.items) else {}


def ingest(arm: Arm, group: Group) -> str | None:
    """Ingest one history; the error text (recorded on each of its items) or None."""
    try:
        arm.ingest(group.history_id, group.records)
    except ArmError:
        raise  # the arm is misconfigured or broke its protocol: stop, not an item error
    except Exception as exc:  # noqa: BLE001 - recorded per item, never a miss
        return f"ingest: {type(exc).__name__}: {exc}"
    return None


def search(arm: Arm, item: Item, top_k: int, gold_match: GoldMatch) -> tuple[list[Hit] | None, float | None, str | None]:
    """(hits, latency ms, error) of one search (``search_item`` for arms that have it, e.g. oracle)."""
    t0 = time.perf_counter()
    search_item = getattr(arm, "search_item", None)
    try:
        if callable(search_item):
            result = search_item(item, top_k, gold_match)
        else:
            result = arm.search(item.question, top_k)
    except ArmError:
        raise
    except Exception as exc:  # noqa: BLE001
        return None, None, f"search: {type(exc).__name__}: {exc}"
    latency = (time.perf_counter() - t0) * 1000.0
    return check_hits(arm, result), latency, None


def check_hits(arm: Arm, result: Any) -> list[Hit]:
    """The arm's result as a list of Hits; ArmError (the protocol is broken) otherwise."""
    name = type(arm).__name__
    if result is None or isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
        raise ArmError(f"arm: {name}.search returned {type(result).__name__}; it must return a list of memrun.records.Hit")
    hits = list(result)
    for hit in hits:
        if not isinstance(hit, Hit):
            raise ArmError(f"arm: {name}.search returned a {type(hit).__name__} in its list; "
                           "each hit must be a memrun.records.Hit(key, score, text)")
        if not isinstance(hit.key, str):
            raise ArmError(f"arm: {name}.search returned a Hit whose key is {type(hit.key).__name__}; keys are str")
    return hits


def retrieve_group(arm: Arm, group: Group, top_k: int, gold_match: GoldMatch) -> list[Retrieved]:
    """Ingest a group and search each item (and take the arm's own answer when it has one)."""
    ingest_error = ingest(arm, group)
    session_of = sessions_of(group)
    answer_for = getattr(arm, "answer_for", None)
    out = []
    for item in group.items:
        hits, latency, error = (None, None, ingest_error) if ingest_error else search(arm, item, top_k, gold_match)
        answer = None
        if error is None and callable(answer_for):
            try:
                answer = answer_for(item)
            except Exception as exc:  # noqa: BLE001
                error = f"answer_for: {type(exc).__name__}: {exc}"
        out.append(Retrieved(item, hits, latency, error, answer, session_of))
    return out
