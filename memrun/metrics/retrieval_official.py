"""Named retrieval variants that equal a benchmark's own evaluation code, beside memrun's standard ones.

memrun's ``ndcg@K`` is the trec-style nDCG (Järvelin & Kekäläinen 2002, gain / log2(i + 1));
``recall@K`` credits an item when a gold record is among the top K. Two benchmarks publish
numbers computed otherwise; their definitions live here, as *named variants* in their own
columns, so that no one mistakes one for the other (see docs/reproducing.md).

**LongMemEval's official nDCG** (``lme_ndcg@K``; source: ``src/retrieval/eval_utils.py`` of
github.com/xiaowu0162/LongMemEval, functions ``dcg``, ``ndcg``, ``evaluate_retrieval`` and
``evaluate_retrieval_turn2session``, called by ``src/retrieval/run_retrieval.py``):

- DCG@K = rel_1 + sum_{i=2..K} rel_i / log2(i): ranks 1 and 2 both count fully (the trec
  form divides rank 2 by log2(3)). IDCG@K is the DCG of the ideal order: all relevant
  corpus entries first, so min(K, n relevant) ones. nDCG is 0 when nothing is relevant.
- At session level the official code maps every *turn* id to its session and evaluates
  the turn ranking at an *effective* cut-off: the smallest prefix of at least K turns
  that covers K distinct sessions (or the whole corpus when it holds fewer). Recall any/all
  read the sessions in that prefix; nDCG reads the prefix's *turns* with the turn-position
  discount above, each turn of a gold session counting 1 (no de-duplication by session).
- Turns of a gold (``answer``) session that carry no ``has_answer`` flag are renamed to
  ``noans`` ids by ``process_item_flat_index``: they neither credit the session nor share
  its id, so they form a session of their own when the cut-off is widened
  (:func:`pseudo_session`).

**LoCoMo's evidence-share recall** (``evidence_share@K``; source: ``task_eval/evaluation.py``
of github.com/snap-research/LoCoMo, ``eval_question_answering``, its RAG recall): the share
of the question's evidence strings, *exactly as written in the file*, that are among the
retrieved context ids; a question with no evidence, or no context, counts 1. The session
form (the official summary mode) credits an evidence string when the session it names,
``ev.split(':')[0][1:]`` (``"D8:6"`` -> ``"8"``), is among the retrieved sessions.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memrun.metrics.retrieval import NAMED_VARIANTS, ItemRetrieval, score_item

LME_NDCG, EVIDENCE_SHARE = NAMED_VARIANTS[:2]  # per-item columns <name>_at_K and session_<name>_at_K

OFFICIAL_NO_GOLD = "official_no_gold"
"""``Item.extra`` flag: a question the official script scores although it has no gold turn."""
LME_OFFICIAL_PRESET = "official"
"""``benchmark.preset`` of LongMemEval that reproduces ``run_retrieval.py`` (see docs/reproducing.md)."""
ANSWER_MARK, NO_ANSWER_MARK = "answer", "noans"
LOCOMO_SESSION_PREFIX = "session_"


def lme_dcg(relevances: Sequence[int | bool]) -> float:
    """LongMemEval's DCG of binary relevances in rank order: rel_1 + sum_{i>=2} rel_i / log2(i)."""
    return math.fsum(float(r) if i == 1 else r / math.log2(i) for i, r in enumerate(relevances, start=1) if r)


def lme_ndcg(relevances: Sequence[int | bool], n_relevant: int, k: int) -> float:
    """LongMemEval's nDCG@k: :func:`lme_dcg` of the first ``k`` relevances over the DCG of
    ``min(k, n_relevant)`` relevant entries at the top; 0.0 when ``n_relevant`` is 0."""
    ideal = lme_dcg([1] * min(k, n_relevant))
    return lme_dcg(relevances[:k]) / ideal if ideal else 0.0


def lme_turn_ndcg(matches: Sequence[frozenset[str]], n_gold: int, ks: Iterable[int]) -> dict[int, float]:
    """LongMemEval's turn-level ``ndcg_any@K`` for each K (ranking as :func:`score_item` takes it)."""
    relevances = [bool(m) for m in matches]
    return {k: lme_ndcg(relevances, n_gold, k) for k in ks}


def pseudo_session(key: str, session: str, evidence_turns: frozenset[str]) -> str:
    """The session id LongMemEval's official evaluation gives turn ``key`` of ``session``.

    A turn of a session whose id contains ``answer`` keeps the session id only when it
    is an evidence turn; any other turn of it is renamed (``answer`` -> ``noans``).
    """
    if ANSWER_MARK in session and key not in evidence_turns:
        return session.replace(ANSWER_MARK, NO_ANSWER_MARK)
    return session


def effective_cutoff(sessions: Sequence[str], k: int, complete: bool) -> int | None:
    """LongMemEval's widened cut-off: turns needed for the top to cover ``k`` sessions.

    sessions: the session of each ranked turn (the arm's distinct hits, in rank order).
    complete: the hits are the arm's whole ranking (it returned fewer than it was asked
    for, or the whole corpus), so records it did not return are not retrieved, as at
    turn level. Returns the number of turns to read (at least ``k``), or None when the
    hits were cut at ``top_k`` before covering ``k`` sessions (the cut-off is not known).

    Complete hits that cover fewer than ``k`` sessions: the official ranking goes on into
    the records the arm did not return (the official code orders them by a tie of zero
    scores), each at best in a session not yet reached, so the cut-off is at least
    ``len(sessions) + (k - sessions reached)``, and at least ``k``: that least value is
    returned. The turns past the hits are not retrieved (relevance 0), but they widen the
    ideal DCG, which the gold sets, never the number of hits.
    """
    seen: set[str] = set()
    for i, session in enumerate(sessions, start=1):
        seen.add(session)
        if len(seen) >= k:
            return max(i, k)
    return max(k, len(sessions) + k - len(seen)) if complete else None


@dataclass(frozen=True, slots=True)
class LmeOfficial:
    """One item under LongMemEval's official rules.

    ndcg: K -> turn-level ``ndcg_any@K`` (:func:`lme_turn_ndcg`).
    session: the session columns (:func:`memrun.metrics.retrieval.score_item` over the
        ranking of distinct pseudo-sessions; a K whose effective cut-off the hits do
        not determine is absent, so its columns are None).
    session_ndcg: K -> session-level ``ndcg_any@K`` (turn-position rule), same Ks.
    """

    ndcg: dict[int, float]
    session: ItemRetrieval
    session_ndcg: dict[int, float]


def score_lme_official(
    hit_keys: Sequence[str],
    session_of: Mapping[str, str | None],
    gold_turns: Iterable[str],
    complete: bool,
    ks: Iterable[int],
) -> LmeOfficial | None:
    """Score one LongMemEval item as ``run_retrieval.py`` does (None when it has no gold turn).

    hit_keys: distinct record keys in rank order; session_of: record key -> session;
    gold_turns: the evidence turns (official: ``has_answer`` user turns of ``answer``
    sessions); complete: the hits are the arm's whole ranking (:func:`effective_cutoff`).
    """
    gold = frozenset(gold_turns)
    if not gold:
        return None
    ks = tuple(ks)
    relevances = [key in gold for key in hit_keys]
    sessions = [pseudo_session(key, session_of.get(key) or key, gold) for key in hit_keys]
    # The official gold sessions: each evidence turn's id with its turn number cut off.
    gold_sessions = frozenset(session_of.get(key) or key.rpartition("_")[0] for key in gold)
    cut = {k: effective_cutoff(sessions, k, complete) for k in ks}
    measured = tuple(k for k in ks if cut[k] is not None)
    ranking = list(dict.fromkeys(sessions))
    session = score_item([gold_sessions & {s} for s in ranking], len(gold_sessions), measured)
    assert session is not None  # gold_sessions is not empty
    return LmeOfficial(
        ndcg=lme_turn_ndcg([frozenset({k}) & gold for k in hit_keys], len(gold), ks),
        session=session,
        session_ndcg={k: lme_ndcg(relevances, len(gold), cut[k]) for k in measured},  # type: ignore[arg-type]
    )


def score_without_gold(ks: Iterable[int]) -> LmeOfficial:
    """The official scores of a question kept with no gold turn (its ``has_answer`` user turns
    lie outside ``answer`` sessions): ``any`` of nothing is false, ``all`` of nothing true,
    nDCG 0 (no ideal DCG), at turn and session level alike; reciprocal rank 0."""
    ks = tuple(ks)
    empty = ItemRetrieval(first_gold_rank=None, rr=0.0, hit=dict.fromkeys(ks, False), all=dict.fromkeys(ks, True),
                          precision=dict.fromkeys(ks, 0.0), ndcg=dict.fromkeys(ks, 0.0))
    return LmeOfficial(ndcg=dict.fromkeys(ks, 0.0), session=empty, session_ndcg=dict.fromkeys(ks, 0.0))


def evidence_share(evidence: Sequence[str], context: Iterable[str]) -> float:
    """LoCoMo's RAG recall of one question: the share of ``evidence`` strings found in ``context``.

    evidence: the evidence strings exactly as in the file (not split, not normalized: a
    string naming two ids, or ``D30:05`` for ``D30:5``, is never found). context: the
    retrieved ids. 1.0 when either is empty (the official convention).
    """
    found = set(context)
    if not evidence or not found:
        return 1.0
    return sum(e in found for e in evidence) / len(evidence)


def evidence_session(evidence: str) -> str:
    """The session an evidence string names, read as the official code does: ``"D8:6"`` ->
    ``"session_8"`` (``ev.split(':')[0][1:]``; ``"D:11:26"`` names none, ``""``)."""
    number = evidence.split(":")[0][1:]
    return f"{LOCOMO_SESSION_PREFIX}{number}" if number else ""


SCAN_PAIRS = 64
"""Up to this many (evidence string, context id) pairs, :func:`evidence_share_by_k` finds each
string's first rank by scanning the context (``list.index``) instead of mapping every context
id to its rank first: a LoCoMo question names one to a few strings, and the map of ten hits
was ~1.6 of the 3.5 us of a call (two calls an item); a long context keeps the map (a scan
per string would cost evidence x context comparisons)."""


def evidence_share_by_k(
    evidence: Sequence[str], context: Sequence[str], ks: Iterable[int], session_of: Mapping[str, str | None] | None = None,
    per_session: bool = False,
) -> dict[int, float]:
    """:func:`evidence_share` with the first K context ids, for each K.

    per_session: credit an evidence string when its session (:func:`evidence_session`) is
    the session (``session_of``; an id it does not map is a session itself) of one of the
    first K context ids: the official summary mode, whose context is K sessions, applied
    to the sessions of the retrieved turns (context: turn keys) or to the first K
    distinct sessions reached (context: session ids).
    """
    mapping = session_of or {}
    if per_session:
        evidence = [evidence_session(e) for e in evidence]
        context = [mapping.get(c) or c for c in context]
    if not evidence or not context:  # the official convention: nothing to find, or no context
        return {k: 1.0 for k in ks}
    if len(evidence) * len(context) <= SCAN_PAIRS:  # a scan of the context per string, in C
        ranks = sorted([context.index(e) + 1 if e in context else math.inf for e in evidence])
    else:  # context id -> its first rank (1-based): built from the last rank up, so the first one stays
        first = dict(zip(reversed(context), range(len(context), 0, -1)))
        ranks = sorted(map(first.get, evidence, itertools.repeat(math.inf)))  # each evidence string's first rank
    n = len(evidence)
    return {k: bisect.bisect_right(ranks, k) / n if k > 0 else 1.0 for k in ks}


def session_cut_warning(rows: Iterable[Mapping[str, object]], ks: Iterable[int], top_k: int | None) -> str | None:
    """The warning for session cut-offs a run could not measure, or None.

    rows: the run's rows. Where K counts distinct sessions (``session_cut=sessions``, and
    the official preset), a session K <= ``top_k`` is null on a scored item when its hits
    were cut at ``top_k`` before reaching K sessions (:func:`effective_cutoff`): the first
    K sessions are not known, so the K is not measured rather than read from fewer.
    """
    measurable = [k for k in ks if top_k is None or k <= top_k]
    scored = [r for r in rows if r.get("session_rr") is not None]
    missing = {k: sum(r.get(f"session_hit_at_{k}") is None for r in scored) for k in measurable}
    missing = {k: n for k, n in missing.items() if n}
    if not missing:
        return None
    at = ", ".join(f"@{k} ({n} items)" for k, n in missing.items())
    return (f"session metrics not measured at {at}: the hits, cut at arm.top_k={top_k}, reach fewer than K "
            f"sessions there, so the first K sessions are unknown (not scored over fewer); raise arm.top_k "
            f"(docs/reproducing.md)")
