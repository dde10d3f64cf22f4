"""Retrieval-axis metrics: per item from ranked hits and gold, per run as means.

Definitions follow the standard IR ones (Manning, Raghavan & Schütze, *Introduction to
Information Retrieval*, ch. 8) with binary relevance, as the LoCoMo and LongMemEval
retrieval evaluations use them. A retrieved record is *relevant* when it satisfies at
least one of the item's gold keys (see :func:`memrun.records.gold_matches`). Ranks are
1-based. An item without gold keys has no retrieval score (all fields None) and is left
out of every mean; the run counts such items.

**Each key is credited once, at its first rank.** An arm's hits are first reduced to
their distinct keys in order of first appearance (:func:`distinct_ranking`): a later
hit repeating a key is dropped from the ranking and occupies no rank position, as
trec_eval-like tools treat a duplicate document. So an arm that returns its best record
five times has a ranking of one hit: recall@K, recall_all@K, MRR and nDCG@K read that
one hit. precision@K divides by K, as trec_eval's P@K does (Manning et al., sec. 8.4),
never by the hits returned: an arm that returns fewer hits cannot raise its precision,
so precision@5 of that arm is at most 1/5. The run counts items whose hits repeat a key (``arm_checks.duplicate_keys`` in
``summary.json``) and warns.

**Metrics @K need K hits.** An arm asked for ``top_k`` hits cannot be measured at a
cut-off K > ``top_k``: those columns are None (not a number read from fewer hits),
see :func:`measured_ks`.

Two gold granularities: the item's ``gold_keys`` (records, e.g. LongMemEval turns) give
the unprefixed columns; its ``gold_sessions`` give the same columns prefixed
``session_``, scored on the ranking of the *distinct sessions* of the hits in order of
first appearance (:func:`session_ranking`), so session recall@K asks whether a gold
session is among the first K sessions reached. This is LongMemEval's turn-to-session
conversion (``evaluate_retrieval_turn2session``, which widens K until the top turns
cover K sessions). In LongMemEval's terms recall@K is recall_any@K and recall_all@K is
recall_all@K; memrun's nDCG@K is the trec-style one, not LongMemEval's ``ndcg_any@K``
(another discount): that one is the named variant ``lme_ndcg@K``. A benchmark may instead
cut the session ranking at K *turns* (``per="turns"`` of :func:`score_sessions`): a gold
session is found when one of the top K turns lies in it (the published LoCoMo harnesses).

**Named variants** (:data:`NAMED_VARIANTS`, defined in
:mod:`memrun.metrics.retrieval_official`): columns ``<name>_at_K`` and
``session_<name>_at_K``, filled only when the benchmark asks for them (None otherwise):
``lme_ndcg`` (LongMemEval's official nDCG) and ``evidence_share`` (LoCoMo's RAG recall,
whose denominator is every item that retrieved, items without resolvable gold included).
``gold_share`` (:mod:`memrun.metrics.gold_share`, the share of the item's gold found) is
filled for every benchmark.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.metrics import columns as metrics_columns
else:
    metrics_columns = lazy("memrun.metrics.columns")  # run-level means only: not at start-up (--cfg job)

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
SESSION_PREFIX = "session_"
NAMED_VARIANTS: tuple[str, ...] = ("lme_ndcg", "evidence_share", "gold_share")
"""Named metric families of :mod:`memrun.metrics.retrieval_official`: ``<name>@K`` per run."""
OWN_DENOMINATOR: frozenset[str] = frozenset({"evidence_share", "gold_share"})
"""Named families averaged over every item whose column is set (evidence_share: items without
resolvable gold too; gold_share: exactly the items with gold, so the official preset's questions
scored without gold are not averaged in)."""
SESSION_CUTS = ("sessions", "turns")
"""What K counts at session granularity: distinct sessions (LongMemEval) or turns."""
GRANULARITIES: dict[str, str] = {"": "record", SESSION_PREFIX: "session"}
"""Column prefix -> granularity name: ``gold_keys`` and ``gold_sessions``."""


@dataclass(slots=True)
class ItemRetrieval:
    """Retrieval scores of one item (not frozen: a run makes two per row, and a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``, 3x the time).

    first_gold_rank: rank of the first relevant hit, None when no hit is relevant.
    rr: reciprocal rank, 1/first_gold_rank, 0.0 when none (the item's MRR term).
    hit: K -> any relevant hit in the top K (recall@K's term; rank@1 is hit[1]).
    all: K -> every gold key satisfied within the top K (recall_all@K's term).
    precision: K -> relevant distinct hits within the top K, divided by K (trec_eval's
        P@K: a ranking shorter than K counts its missing ranks as non-relevant).
    ndcg: K -> nDCG@K with binary gains, each gold key credited once.
    share: K -> the share of the gold keys satisfied within the top K (the ``gold_share``
        variant, :mod:`memrun.metrics.gold_share`).
    """

    first_gold_rank: int | None
    rr: float
    hit: dict[int, bool]
    all: dict[int, bool]
    precision: dict[int, float]
    ndcg: dict[int, float]
    share: dict[int, float] = field(default_factory=dict)


def score_item(
    matches: Sequence[frozenset[str]], n_gold: int, ks: Iterable[int] = DEFAULT_KS
) -> ItemRetrieval | None:
    """Score one item's ranking.

    matches: for each retrieved hit in rank order, the gold keys it satisfies (empty
        frozenset: not relevant). Length = number of hits returned (may be < K).
    n_gold: number of distinct gold keys (> 0), the ideal ranking's relevant count.
    ks: cut-offs K (positive ints).

    Returns None when ``n_gold`` is 0 (no retrieval gold: the item is not scored).
    nDCG@K = DCG@K / IDCG@K with DCG@K = sum over ranks i <= K of g_i / log2(i + 1),
    where g_i = 1 when hit i satisfies a gold key no earlier hit satisfied (so a gold
    key matched by several records is credited once and nDCG stays within [0, 1]), and
    IDCG@K = sum_{i=1}^{min(K, n_gold)} 1 / log2(i + 1) (Järvelin & Kekäläinen 2002).
    """
    if n_gold <= 0:
        return None
    ks = tuple(ks)
    n_hits = len(matches)
    if not any(matches):  # nothing relevant: every figure is 0 (the walk below gives the same)
        zero = {k: 0.0 for k in ks}
        return ItemRetrieval(None, 0.0, dict.fromkeys(ks, False), dict.fromkeys(ks, False), zero, zero.copy(),
                             zero.copy())
    # Walk the ranking once, keeping the cumulative figures at the ranks the cut-offs read.
    reads = _cut_ranks(ks, n_hits)
    first = None
    seen: set[str] = set()
    relevant = 0
    dcg = 0.0
    at: dict[int, tuple[int, int, float]] = {}  # rank -> (relevant hits, gold keys found, DCG) up to it
    for i, m in enumerate(matches, start=1):
        if m:
            if first is None:
                first = i
            relevant += 1
            if not m <= seen:  # a gold key no earlier hit satisfied
                dcg += 1.0 / math.log2(i + 1)
                seen |= m
        if i in reads:
            at[i] = (relevant, len(seen), dcg)
    hit: dict[int, bool] = {}
    full: dict[int, bool] = {}
    precision: dict[int, float] = {}
    ndcg: dict[int, float] = {}
    share: dict[int, float] = {}
    for k, n, idcg in _cuts(ks, n_hits, n_gold):
        hit[k] = first is not None and first <= k
        if n:
            found_relevant, found, gain = at[n]
            full[k] = found >= n_gold
            precision[k] = found_relevant / k
            ndcg[k] = gain / idcg
            share[k] = found / n_gold
        else:
            full[k], precision[k], ndcg[k], share[k] = False, 0.0, 0.0, 0.0
    return ItemRetrieval(first, 1.0 / first if first else 0.0, hit, full, precision, ndcg, share)


@functools.lru_cache(maxsize=256)
def _cut_ranks(ks: tuple[int, ...], n_hits: int) -> frozenset[int]:
    """The ranks :func:`score_item` reads its figures at: min(K, hits) for each K."""
    return frozenset(min(k, n_hits) for k in ks)


@functools.lru_cache(maxsize=1024)
def _cuts(ks: tuple[int, ...], n_hits: int, n_gold: int) -> tuple[tuple[int, int, float], ...]:
    """For each K of :func:`score_item`: (K, the rank its figures are read at: min(K, hits),
    the IDCG of min(K, ``n_gold``) relevant hits). Every item with as many hits and gold
    keys shares them (two ``min`` and an IDCG lookup per K, item and granularity, otherwise)."""
    return tuple((k, min(k, n_hits), _idcg(min(k, n_gold))) for k in ks)


def distinct_ranking(keys: Iterable[str]) -> list[int]:
    """Positions (0-based) of the first occurrence of each distinct key, in rank order.

    keys: hit keys in rank order. ``["a", "a", "b", "a"]`` gives ``[0, 2]``: the
    ranking that every metric reads is ``a`` at rank 1 and ``b`` at rank 2.
    """
    keys = list(keys)
    if len(set(keys)) == len(keys):  # no key repeats (the usual case): every position
        return list(range(len(keys)))
    seen: set[str] = set()
    positions: list[int] = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            positions.append(i)
    return positions


def measured_ks(ks: Iterable[int], top_k: int | None) -> tuple[int, ...]:
    """The cut-offs K that ``top_k`` hits can measure (K <= top_k; all when top_k is None)."""
    return _measured(tuple(ks), top_k)


@functools.lru_cache(maxsize=64)
def _measured(ks: tuple[int, ...], top_k: int | None) -> tuple[int, ...]:
    """:func:`measured_ks` (every row of a run asks for the same ones)."""
    return tuple(k for k in ks if top_k is None or k <= top_k)


def session_ranking(hit_keys: Iterable[str], session_of: Mapping[str, str | None]) -> list[str]:
    """The distinct sessions of ranked hits, in order of first appearance.

    hit_keys: record keys in rank order. session_of: record key -> its session. A key
    with no known session stands for itself (an arm that returns session ids).
    """
    ranking: list[str] = []
    seen: set[str] = set()
    for key in hit_keys:
        session = session_of.get(key) or key
        if session not in seen:
            seen.add(session)
            ranking.append(session)
    return ranking


def score_sessions(
    hit_keys: Iterable[str],
    session_of: Mapping[str, str | None],
    gold_sessions: Iterable[str],
    ks: Iterable[int] = DEFAULT_KS,
    per: str = "sessions",
) -> ItemRetrieval | None:
    """Score an item at session granularity (None when it has no gold session).

    per ``sessions``: the hits' ranking becomes a ranking of distinct sessions
    (:func:`session_ranking`), scored by :func:`score_item` against the distinct gold
    sessions (K counts sessions). per ``turns``: each hit stands at its own rank and is
    relevant when its session is gold (K counts turns; each gold session credited once,
    at its first turn). Raises ValueError for another ``per``.
    """
    gold = frozenset(gold_sessions)
    if per not in SESSION_CUTS:
        raise ValueError(f"per={per!r}: choose one of {', '.join(SESSION_CUTS)}")
    if not gold:
        return None
    return score_item(session_matches(hit_keys, session_of, gold, per), len(gold), ks)


def session_matches(hit_keys: Iterable[str], session_of: Mapping[str, str | None], gold: frozenset[str],
                    per: str) -> list[frozenset[str]]:
    """The ranking :func:`score_sessions` scores, as :func:`score_item` takes it: per ranked
    session (``per="sessions"``, :func:`session_ranking`) or per hit's session (``"turns"``),
    the gold sessions it is (``{session}`` or empty)."""
    ranking = ([session_of.get(key) or key for key in hit_keys] if per == "turns"
               else session_ranking(hit_keys, session_of))
    singles = {s: frozenset((s,)) for s in gold}  # a hit in a gold session: that session (one set each)
    return [singles.get(s, _NO_GOLD) for s in ranking]


_NO_GOLD: frozenset[str] = frozenset()


def metric_columns(ks: Iterable[int] = DEFAULT_KS) -> list[str]:
    """Names of the per-item metric columns, in table order (shared by writer and summary).

    Every granularity of :data:`GRANULARITIES` gets the same columns under its prefix.
    """
    ks = tuple(ks)
    cols: list[str] = []
    for gran in GRANULARITIES:
        cols += [f"{gran}first_gold_rank", f"{gran}rr"]
        for name in ("hit", "all", "precision", "ndcg", *NAMED_VARIANTS):
            cols += [f"{gran}{name}_at_{k}" for k in ks]
    return cols


def item_columns(
    score: ItemRetrieval | None, ks: Iterable[int] = DEFAULT_KS, prefix: str = "",
    named: Mapping[str, Mapping[int, float]] | None = None,
) -> dict[str, object]:
    """Flatten an :class:`ItemRetrieval` into one granularity's columns (None when unscored).

    prefix: ``""`` for record gold, ``"session_"`` for session gold. A K of ``ks`` that
    ``score`` was not computed at (K > top_k, :func:`measured_ks`) gives None columns.
    named: family of :data:`NAMED_VARIANTS` -> K -> value (absent: None columns); set even
    when ``score`` is None (evidence share scores items without resolvable gold).
    """
    return add_item_columns({}, score, ks, prefix, named)


def add_item_columns(
    row: dict[str, object], score: ItemRetrieval | None, ks: Iterable[int] = DEFAULT_KS, prefix: str = "",
    named: Mapping[str, Mapping[int, float]] | None = None,
) -> dict[str, object]:
    """:func:`item_columns` added to ``row`` (in place, in the same order); returns ``row``."""
    ks = tuple(ks)
    row.update(zip(_columns_of(ks, prefix), _values(score, ks, named)))
    return row


def add_all_columns(
    row: dict[str, object], ks: tuple[int, ...], score: ItemRetrieval | None, named: Mapping[str, Mapping[int, float]],
    session_score: ItemRetrieval | None, session_named: Mapping[str, Mapping[int, float]],
) -> dict[str, object]:
    """:func:`add_item_columns` of both granularities (record gold, then ``session_``) in one
    update of ``row`` (a row's ~80 columns inserted at once); returns ``row``."""
    row.update(zip(_all_columns(ks), _values(score, ks, named) + _values(session_score, ks, session_named)))
    return row


def _values(score: ItemRetrieval | None, ks: tuple[int, ...], named: Mapping[str, Mapping[int, float]] | None) -> list[object]:
    """One granularity's column values, in :func:`_columns_of` order: first_gold_rank, rr, then
    hit, all, precision, ndcg and each named variant at each K (None where not computed)."""
    if score is None:
        values: list[object] = [None] * (2 + 4 * len(ks))
    else:
        values = [score.first_gold_rank, score.rr]
        for by_k in (score.hit, score.all, score.precision, score.ndcg):
            values += map(by_k.get, ks)
    for family in NAMED_VARIANTS:
        variant = named.get(family) if named else None
        values += map(variant.get, ks) if variant else [None] * len(ks)
    return values


@functools.lru_cache(maxsize=256)
def _idcg(n: int) -> float:
    """IDCG of ``n`` relevant hits at the top: sum_{i=1}^{n} 1 / log2(i + 1)."""
    return sum(1.0 / math.log2(i + 1) for i in range(1, n + 1))


@functools.lru_cache(maxsize=64)
def _columns_of(ks: tuple[int, ...], prefix: str) -> tuple[str, ...]:
    """One granularity's metric columns (every row of a run asks for the same ones)."""
    return tuple(c for c in metric_columns(ks) if _granularity(c) == prefix)


@functools.lru_cache(maxsize=64)
def _all_columns(ks: tuple[int, ...]) -> tuple[str, ...]:
    """Both granularities' metric columns, record gold first (:func:`add_all_columns`)."""
    return _columns_of(ks, "") + _columns_of(ks, SESSION_PREFIX)


def _granularity(column: str) -> str:
    return SESSION_PREFIX if column.startswith(SESSION_PREFIX) else ""


_RUN_TO_ITEM = {"recall": "hit", "recall_all": "all", "precision": "precision", "ndcg": "ndcg",
                **{name: name for name in NAMED_VARIANTS}}


def item_column_for(metric: str) -> str:
    """The per-item column behind a run-level metric name.

    ``mrr`` -> ``rr``; ``recall@5`` -> ``hit_at_5``; ``recall_all@K`` -> ``all_at_K``;
    ``precision@K`` -> ``precision_at_K``; ``ndcg@K`` -> ``ndcg_at_K``; ``rank@1`` ->
    ``hit_at_1``; a named variant ``lme_ndcg@K`` -> ``lme_ndcg_at_K`` (also ``evidence_share``); each also with the ``session_`` prefix (``session_recall@5`` ->
    ``session_hit_at_5``). Raises ValueError naming the accepted forms for anything else.
    """
    prefix = _granularity(metric)
    base = metric[len(prefix):]
    if base == "mrr":
        return f"{prefix}rr"
    if base == "rank@1":
        return f"{prefix}hit_at_1"
    name, _, k = base.partition("@")
    if name in _RUN_TO_ITEM and k.isdigit() and int(k) > 0:
        return f"{prefix}{_RUN_TO_ITEM[name]}_at_{int(k)}"
    raise ValueError(
        f"unknown retrieval metric {metric!r}; use mrr, rank@1, recall@K, recall_all@K, "
        f"precision@K, ndcg@K or {', '.join(f'{n}@K' for n in NAMED_VARIANTS)}, optionally prefixed session_"
    )


def depth_read(metric: str) -> int | None:
    """How deep ``metric`` reads each ranking: K of a metric @K (``rank@1``: 1), None for
    ``mrr``, which reads the whole ranking the arm returned (so its value moves with
    ``arm.top_k`` alone). A session metric's K counts sessions (or turns, by the benchmark's
    ``session_cut``); one a ranking does not reach is null, never read from fewer. Raises
    ValueError as :func:`item_column_for` does."""
    column = item_column_for(metric)
    _, _, k = column.rpartition("_at_")
    return int(k) if k.isdigit() and "_at_" in column else None


def aggregate(
    rows: Sequence[Mapping[str, object]], ks: Iterable[int] = DEFAULT_KS, prefix: str = ""
) -> dict[str, float | int | None]:
    """Run-level retrieval metrics over per-item rows (means over scored items).

    rows: per-item column dicts as produced by :func:`item_columns` (unscored items have
        ``rr`` None and are skipped; errored items must be filtered out by the caller).
    prefix: the granularity's column prefix (``""`` or ``"session_"``); the returned
        names carry no prefix.
    Returns ``n_scored`` plus recall@K (share of items with a relevant hit in the top K),
    recall_all@K, precision@K, ndcg@K for each K, ``mrr`` (mean reciprocal rank, 0 for an
    item with no relevant hit) and ``rank@1`` (= recall@1). Means are fractions in
    [0, 1], None when no item was scored or when a scored item's column is None (a
    cut-off K beyond the arm's top_k is not measured). A named variant ``<name>@K``
    (:data:`NAMED_VARIANTS`) is present only when some row has its column: over the
    scored items, or for :data:`OWN_DENOMINATOR` families over every row that has it.
    """
    ks = tuple(ks)
    scored = list(compress(rows, [v is not None for v in metrics_columns.column(rows, f"{prefix}rr")]))
    n = len(scored)
    out: dict[str, float | int | None] = {"n_scored": n}
    own = [f"{prefix}{family}_at_{k}" for family in NAMED_VARIANTS if family in OWN_DENOMINATOR for k in ks]
    names = [f"{prefix}rr", *(f"{prefix}{m}_at_{k}" for k in ks for m in ("hit", "all", "precision", "ndcg")),
             *(f"{prefix}{family}_at_{k}" for family in NAMED_VARIANTS if family not in OWN_DENOMINATOR for k in ks)]
    read = metrics_columns.columns(scored, names)
    every = metrics_columns.columns(rows, own)

    def of_scored(col: str) -> list[Any]:
        return read[prefix + col]

    def mean(values: list[Any]) -> float | None:
        if not n or None in values:
            return None
        return math.fsum(values) / n  # exact, so order-free; bools count as 0/1

    out["mrr"] = mean(of_scored("rr"))
    for k in ks:
        out[f"recall@{k}"] = mean(of_scored(f"hit_at_{k}"))
        out[f"recall_all@{k}"] = mean(of_scored(f"all_at_{k}"))
        out[f"precision@{k}"] = mean(of_scored(f"precision_at_{k}"))
        out[f"ndcg@{k}"] = mean(of_scored(f"ndcg_at_{k}"))
    for family in NAMED_VARIANTS:
        for k in ks:
            name = f"{prefix}{family}_at_{k}"
            if family in OWN_DENOMINATOR:
                values = every[name]
                if None in values:  # else every row has it (LoCoMo's evidence share, gold share): as it is
                    values = [v for v in values if v is not None]
                if values:
                    out[f"{family}@{k}"] = math.fsum(values) / len(values)
            else:
                values = of_scored(f"{family}_at_{k}")
                if values.count(None) < len(values):  # some scored row has it
                    out[f"{family}@{k}"] = mean(values)
    if 1 in ks:
        out["rank@1"] = out["recall@1"]
    return out
