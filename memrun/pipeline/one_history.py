"""The retrieval stage, shared by both axes: ingest a history, search each item, make its row.

An arm's failure on one history or item is recorded on the item (``error``) and excluded
from every metric; an :class:`~memrun.errors.ArmError` (a misconfigured arm, or one that
breaks the protocol, e.g. returns something other than :class:`~memrun.records.Hit`)
stops the run.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from memrun.arms.contract import Arm, ArmHooks, arm_hooks
from memrun.errors import ArmError
from memrun.metrics.gold_share import GOLD_SHARE
from memrun.metrics.retrieval import (
    SESSION_PREFIX,
    add_all_columns,
    distinct_ranking,
    measured_ks,
    score_item,
    session_matches,
    session_ranking,
)
from memrun.metrics.retrieval_official import (
    EVIDENCE_SHARE,
    LME_NDCG,
    LME_OFFICIAL_PRESET,
    OFFICIAL_NO_GOLD,
    evidence_share_by_k,
    score_lme_official,
    score_without_gold,
)
from memrun.pipeline.progress_lines import ACTIVITY
from memrun.records import Dataset, GoldMatch, Group, Hit, Item, fold, gold_matcher

INGESTED = "ingested"  # the progress line's phase: histories ingested, records/s


@dataclass(slots=True)
class Retrieved:
    """One item after retrieval (not frozen: one per item, and a frozen dataclass's ``__init__``
    sets each of its eleven fields through ``object.__setattr__``, 4x the time): its hits (None when retrieval failed), search latency in
    ms (the call itself), the retrieval error, the arm's own answer when the arm answers itself, its
    group's record -> session map (for session gold), and what the run checks hits
    against: ``history``, the record keys and session ids of the item's history, and
    ``n_records``, how many records it holds; ``queue_ms``: time the search waited before
    (or inside the arm, between) its requests, not counted in the latency
    (:mod:`memrun.pipeline.many_histories`)."""

    item: Item
    hits: list[Hit] | None
    latency_ms: float | None
    error: str | None
    arm_answer: str | None = None
    session_of: Mapping[str, str | None] = field(default_factory=dict)  # record key -> session (session gold)
    history: frozenset[str] = frozenset()
    n_records: int = 0
    queue_ms: float | None = None
    gold_texts: tuple[str | None, ...] | None = None  # the text of each gold key's record (None: no such record)
    gold_unreachable: int | None = None  # gold keys no record of the history can match (None: no gold)


def make_row(run_id: str | None, r: Retrieved, dataset: Dataset, ks: Sequence[int], top_k: int | None = None,
             scored: bool = True) -> dict[str, Any]:
    """The retrieval part of one item's row (columns of :mod:`memrun.io.schema`).

    Metrics read the hits' distinct keys in order of first appearance
    (:func:`memrun.metrics.retrieval.distinct_ranking`), the first ``top_k`` of them: hits
    an arm returns beyond what it was asked for are not scored (they would lift MRR
    and the first gold rank; ``arm_checks.over_top_k`` counts them); ``retrieved_keys``,
    ``retrieved_scores`` and ``n_retrieved`` keep what the arm returned. Metric columns
    at a K > ``top_k`` are None (not measured), and all of them are None when
    ``scored`` is False (an arm that retrieves nothing, ``search_mode=none``), as are its
    ``retrieved_*`` columns and search latencies: it made no search (not an empty one).
    """
    item, hits = r.item, r.hits if scored else None  # an arm that retrieves nothing made no search: none recorded
    scores = session_scores = None
    named: dict[str, dict[str, dict[int, float]]] = {"": {}, SESSION_PREFIX: {}}
    hit_keys = None if hits is None else [h.key for h in hits]
    if hits is not None and hit_keys is not None and scored:
        order = distinct_ranking(hit_keys)
        if len(order) == len(hits):  # no key repeats (the usual case): the hits as they are
            distinct, keys = hits[:top_k], hit_keys[:top_k]
        else:
            distinct = [hits[i] for i in order][:top_k]
            keys = [h.key for h in distinct]
        measured = measured_ks(ks, top_k)
        if item.gold_keys:
            matches = list(map(gold_matcher(item.gold_keys, dataset.gold_match), distinct))
            scores = score_item(matches, len(set(item.gold_keys)), measured)
            named[""][GOLD_SHARE] = scores.share if scores else {}  # gold_share_by_k, from the same walk
        complete = top_k is None or len(hits) < top_k or len(keys) >= r.n_records  # the arm's whole ranking
        # K distinct sessions are known only when the hits reach them or are the arm's whole ranking
        session_ks = measured
        if dataset.session_cut == "sessions" and not complete:
            reached = len(session_ranking(keys, r.session_of))
            session_ks = tuple(k for k in measured if reached >= k)
        if dataset.preset == LME_OFFICIAL_PRESET:
            official = score_lme_official(keys, r.session_of, item.gold_keys, complete, measured)
            if item.extra.get(OFFICIAL_NO_GOLD):  # kept by the official script without gold
                official = score_without_gold(measured)
                scores = official.session
            if official:
                session_scores = official.session
                named[""][LME_NDCG], named[SESSION_PREFIX][LME_NDCG] = official.ndcg, official.session_ndcg
        elif item.gold_sessions:  # score_sessions, with its ranking kept for the gold share
            gold = frozenset(item.gold_sessions)
            session_hits = session_matches(keys, r.session_of, gold, dataset.session_cut)
            session_scores = score_item(session_hits, len(gold), session_ks)
            named[SESSION_PREFIX][GOLD_SHARE] = session_scores.share if session_scores else {}
        if EVIDENCE_SHARE in dataset.named_metrics:
            raw = item.gold_keys_raw
            named[""][EVIDENCE_SHARE] = evidence_share_by_k(raw, keys, measured)
            # the session form reads the same K as the session columns: K turns, or K distinct sessions
            context = keys if dataset.session_cut == "turns" else session_ranking(keys, r.session_of)
            named[SESSION_PREFIX][EVIDENCE_SHARE] = evidence_share_by_k(
                raw, context, session_ks, r.session_of, per_session=True)
    row: dict[str, Any] = {
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
        "gold_texts": None if r.gold_texts is None else list(r.gold_texts),
        "extra": json.dumps(item.extra, ensure_ascii=False) if item.extra else None,
        "retrieved_keys": hit_keys,
        "retrieved_scores": None if hits is None else [h.score for h in hits],
        "retrieved_texts": None if hits is None else [h.text for h in hits],
        "n_retrieved": None if hits is None else len(hits),
        "search_latency_ms": r.latency_ms if scored else None,
        "search_queue_ms": r.queue_ms if scored else None,
        "error": r.error,
        "gold_sessions": list(item.gold_sessions),
        "abstention": item.abstention,
        "gold_unreachable": r.gold_unreachable,
    }
    return add_all_columns(row, ks if type(ks) is tuple else tuple(ks), scores, named[""], session_scores,
                           named[SESSION_PREFIX])


def sessions_of(group: Group) -> dict[str, str | None]:
    """Record key -> session, when an item of the group has session gold (else empty)."""
    return {r.key: r.session for r in group.records} if any(i.gold_sessions for i in group.items) else {}


def retrieval_conventions(dataset: Dataset) -> dict[str, Any]:
    """The instrument's comparability fields that say how hits were credited: ``granularity``
    (record gold, and what K counts at session granularity), ``retrieval_preset`` and ``records``
    (what a record holds, when not the benchmark's default)."""
    return {"granularity": f"record; session: top K {dataset.session_cut}", "retrieval_preset": dataset.preset,
            "records": dataset.records}


def ingest(arm: Arm, group: Group, hooks: ArmHooks | None = None) -> str | None:
    """Ingest one history; the error text (recorded on each of its items) or None.
    ``hooks``: the arm's (:func:`memrun.arms.contract.arm_hooks`), when the caller has them."""
    try:
        arm.ingest(group.history_id, group.records)
    except ArmError:
        raise  # the arm is misconfigured or broke its protocol: stop, not an item error
    except SystemExit as exc:
        raise exited(arm, "ingest", exc) from None
    except Exception as exc:  # noqa: BLE001 - recorded per item, never a miss
        return f"ingest: {type(exc).__name__}: {exc}"
    prepare = (hooks or arm_hooks(arm)).prepare_queries  # optional: e.g. embed the questions in one batch
    if prepare is not None:
        try:
            prepare([item.question for item in group.items])
        except ArmError:
            raise
        except SystemExit as exc:
            raise exited(arm, "prepare_queries", exc) from None
        except Exception:  # noqa: BLE001 - each search then prepares its own query, and records its error
            pass
    return None


def exited(arm: Any, method: str, exc: SystemExit) -> ArmError:
    """The ArmError for an arm method that called ``sys.exit`` (``SystemExit``): the run
    stops in one line naming the arm and the method, instead of exiting with the arm's code
    and no word; a failing search or ingest should raise an exception, recorded on its items."""
    return ArmError(f"arm: {type(arm).__name__}.{method} called sys.exit({exc.code!r}): an arm must raise an exception "
                    "for a failed call (recorded on its items), not end the process")


def search(arm: Arm, item: Item, top_k: int, gold_match: GoldMatch, warmup: bool = False,
           hooks: ArmHooks | None = None) -> tuple[list[Hit] | None, float | None, str | None]:
    """(hits, latency ms, error) of one search (``search_item`` for arms that have it, e.g.
    oracle); with ``warmup`` the query is searched twice and the second search counts."""
    search_item = (hooks or arm_hooks(arm)).search_item
    try:
        for _ in range(2 if warmup else 1):
            t0 = time.perf_counter()
            if search_item is not None:
                result = search_item(item, top_k, gold_match)
            else:
                result = arm.search(item.question, top_k)
    except ArmError:
        raise
    except SystemExit as exc:
        raise exited(arm, "search", exc) from None
    except Exception as exc:  # noqa: BLE001
        return None, None, f"search: {type(exc).__name__}: {exc}"
    latency = (time.perf_counter() - t0) * 1000.0
    return check_hits(arm, result), latency, None


def check_hits(arm: Arm, result: Any) -> list[Hit]:
    """The arm's result as a list of Hits; ArmError (the protocol is broken) otherwise: a
    hit that is not a Hit, or whose key is not a str, score not a real number or text not
    a str (the row could not hold it: the run would end in the writer's traceback)."""
    if type(result) is list:
        hits = result.copy()
        if (set(map(type, hits)) <= _HITS and set(map(type, map(_KEY, hits))) <= _STRS  # Hits with str keys,
                and set(map(type, map(_SCORE, hits))) <= _FLOATS and set(map(type, map(_TEXT, hits))) <= _STRS):
            return hits
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
        if not _number(hit.score):
            raise ArmError(f"arm: {name}.search returned a Hit whose score is {type(hit.score).__name__} "
                           f"({hit.score!r:.40}); scores are numbers (float)")
        if not isinstance(hit.text, str):
            raise ArmError(f"arm: {name}.search returned a Hit whose text is {type(hit.text).__name__}; "
                           "texts are str ('' when the arm has none)")
    return hits


def _number(score: Any) -> bool:
    """Whether a hit's score is a number the row's float column holds: an int or float, or a
    numpy number (numpy.float32 from an embedder); not a bool, str, None or Fraction."""
    return (isinstance(score, (int, float)) and not isinstance(score, bool)) or (
        hasattr(score, "dtype") and isinstance(score, Real))


_HITS, _STRS, _FLOATS = frozenset({Hit}), frozenset({str}), frozenset({float, int})
_KEY, _SCORE, _TEXT = operator.attrgetter("key"), operator.attrgetter("score"), operator.attrgetter("text")


def record_texts(group: Group) -> dict[str, str]:
    """Record key -> text of a group's records (what a gold key's text is looked up in)."""
    return {r.key: r.text for r in group.records}


def gold_texts(item: Item, texts: Mapping[str, str], gold_match: GoldMatch) -> tuple[str | None, ...] | None:
    """The text of each of ``item``'s gold records, in ``gold_keys`` order (None for a key
    that names no record of the history, e.g. a session id); None when the gold is not
    record keys (``gold_match=substring``: phrases a hit must contain) or there is none."""
    if gold_match != "key" or not item.gold_keys:
        return None
    return tuple(texts.get(k) for k in item.gold_keys)


def gold_reach(group: Group, gold_match: GoldMatch) -> Callable[[Item], int | None]:
    """For one history: item -> how many of its gold keys no record can match (None: no gold).

    ``key``: a gold key naming no record and no session of the history; ``substring``: a
    phrase no record's key or text contains (case-folded, as :func:`memrun.records.gold_matcher`
    matches). Such gold is *unreachable*: every arm misses it, and the run counts it.
    """
    if gold_match == "key":
        known = history_keys(group)
        return lambda item: sum(k not in known for k in item.gold_keys) if item.gold_keys else None
    haystack: list[str] = []  # folded once, on the first item with gold

    def unreachable(item: Item) -> int | None:
        if not item.gold_keys:
            return None
        if not haystack:
            haystack.append("\0".join(fold(r.key) + "\n" + fold(r.text) for r in group.records))
        return sum(fold(k) not in haystack[0] for k in item.gold_keys)

    return unreachable


def history_keys(group: Group) -> frozenset[str]:
    """The keys a hit may name for the group's items: its record keys and session ids."""
    return frozenset(r.key for r in group.records) | frozenset(r.session for r in group.records if r.session)


def arm_answer(answer_for: Any, item: Item, error: str | None) -> tuple[str | None, str | None]:
    """(the arm's own answer for ``item``, the row's error): ``answer_for(item)`` when the
    arm has one and the search did not fail; an exception it raises becomes the error."""
    if error is not None or answer_for is None:
        return None, error
    try:
        return answer_for(item), None
    except SystemExit as exc:
        raise exited(getattr(answer_for, "__self__", answer_for), "answer_for", exc) from None
    except Exception as exc:  # noqa: BLE001 - recorded on the item
        return None, f"answer_for: {type(exc).__name__}: {exc}"


def iter_group(arm: Arm, group: Group, top_k: int, gold_match: GoldMatch, answers: bool = False,
               warmup: bool = False, hooks: ArmHooks | None = None) -> Iterator[Retrieved]:
    """Ingest a group, then search each item as it is asked for (and, with ``answers``,
    take the arm's own answer when it has ``answer_for``; ``warmup``: :func:`search`).
    ``hooks``: the arm's (:func:`memrun.arms.contract.arm_hooks`), when the caller has them."""
    hooks = hooks or arm_hooks(arm)
    ingest_error = ingest(arm, group, hooks)
    ACTIVITY.advance(INGESTED, 1, records=len(group.records))
    session_of = sessions_of(group)
    known = history_keys(group)
    answer_for = hooks.answer_for if answers else None
    texts = record_texts(group)
    reach = gold_reach(group, gold_match)
    for item in group.items:
        hits, latency, error = (None, None, ingest_error) if ingest_error else search(arm, item, top_k, gold_match,
                                                                                       warmup, hooks)
        answer, error = arm_answer(answer_for, item, error)
        yield Retrieved(item, hits, latency, error, answer, session_of, known, len(group.records),
                        queue_ms=None if latency is None else 0.0, gold_texts=gold_texts(item, texts, gold_match),
                        gold_unreachable=reach(item))


def retrieve_group(arm: Arm, group: Group, top_k: int, gold_match: GoldMatch) -> list[Retrieved]:
    """Ingest a group and search each item (and take the arm's own answer when it has one)."""
    return list(iter_group(arm, group, top_k, gold_match, answers=True))
