"""The data model shared by benchmarks, arms and the run: records, items, hits.

A benchmark yields :class:`Group` objects: one *history* (the memory records an arm
ingests) and the :class:`Item` questions asked against it. LoCoMo has one group per
conversation; LongMemEval one per question. Arms see records and queries only, never
gold; the run matches hits against gold with :func:`gold_matches`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

GoldMatch = Literal["key", "substring"]
"""How a retrieved hit is matched against an item's gold keys.

``key``: the hit's key equals a gold key (LoCoMo dia_ids).
``substring``: a gold key, case-folded with underscores read as spaces, occurs in the
hit's key or text (the lenient rule of author-written sets).
"""


@dataclass(frozen=True, slots=True)
class Record:
    """One memory record an arm may ingest.

    key: stable id within its history (LoCoMo: the turn's dia_id, e.g. ``D3:12``).
    text: what an arm indexes (LoCoMo: ``"Speaker: text"`` plus an image caption).
    timestamp: the record's date as the dataset gives it (LoCoMo: the session date).
    session: the session the record belongs to, for session-level gold.
    """

    key: str
    text: str
    timestamp: str | None = None
    session: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved record, as an arm returns it, in rank order (rank 1 first)."""

    key: str
    score: float
    text: str = ""


_HIT_SLOTS = tuple(vars(Hit)[name].__set__ for name in ("key", "score", "text"))


def new_hits(records: Sequence[Record], order: Iterable[int], scores: Iterable[float]) -> list[Hit]:
    """``[Hit(records[i].key, score, records[i].text) for i, score in zip(order, scores)]``, the
    same objects, each built by setting its three slots directly instead of through the
    frozen dataclass's ``__init__`` (three ``object.__setattr__`` calls): 2.4x faster, and an
    arm builds ~10 a search. ``scores`` must already be floats."""
    new, (set_key, set_score, set_text) = object.__new__, _HIT_SLOTS
    hits = []
    for i, score in zip(order, scores):
        record = records[i]
        hit = new(Hit)
        set_key(hit, record.key)
        set_score(hit, score)
        set_text(hit, record.text)
        hits.append(hit)
    return hits


@dataclass(frozen=True, slots=True)
class Item:
    """One question of a benchmark.

    item_id: stable across runs (LoCoMo: ``<conversation id>:<qa row index>``).
    history_id: the :class:`Group` whose records the item is asked against.
    cluster: the bootstrap's cluster key (LoCoMo: the conversation).
    category: the dataset's raw category, rendered as text (LoCoMo: ``"1"``..``"5"``).
    answer: the gold answer normalized to text, or None when the item has none.
    answer_raw: the gold answer exactly as given, JSON-encoded.
    gold_keys: normalized retrieval gold (LoCoMo: evidence dia_ids); empty when the
        item has no usable retrieval gold (it is then left out of retrieval metrics).
    gold_keys_raw: the evidence exactly as given.
    extra: benchmark-specific fields kept as columns (e.g. ``adversarial_answer``).
    gold_sessions: a second, coarser retrieval gold: the sessions (``Record.session``)
        holding the evidence (LongMemEval: ``answer_session_ids``); empty when the
        benchmark gives none. Scored in the ``session_*`` columns from the sessions of
        the ranked hits (see :func:`memrun.metrics.retrieval.score_sessions`).
    abstention: the item's correct answer is to abstain (LongMemEval: ids ending in
        ``_abs``); reported apart and graded with the abstention rule.
    """

    item_id: str
    history_id: str
    cluster: str
    category: str
    question: str
    answer: str | None
    answer_raw: str
    gold_keys: tuple[str, ...]
    gold_keys_raw: tuple[str, ...] = ()
    question_date: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    gold_sessions: tuple[str, ...] = ()
    abstention: bool = False


@dataclass(slots=True)
class Group:
    """One history (the records an arm ingests once) and the items asked against it."""

    history_id: str
    records: Sequence[Record]
    items: list[Item]


@dataclass(slots=True)
class Dataset:
    """A loaded benchmark: its groups plus what loading it counted.

    split: the file or split loaded (``locomo10``); the benchmark's name is the config's.
    sha256: the sha256 of the dataset file as read (comparability depends on it).
    groups: the groups, in file order: a list, or an iterable that produces them lazily
        (LongMemEval: one group per question, parsed as it is reached, so memory does
        not grow with the file). A lazy iterable should start over on each ``iter()``.
    categories: raw category -> label, from the config.
    comparable_categories: the categories of the published headline column, or None
        when every category counts.
    gold_match: how hits are matched against gold keys.
    counts: normalization counts (e.g. ``evidence_split``, ``sessions_empty``), complete
        once loading finished; they go to the summary and the instrument.
    warnings: one line each, printed before the run and kept in the instrument.
        With lazy groups, counts and warnings may grow while the groups are produced.
    index: ``(item_id, category)`` of every item in file order, when the loader knows
        them before producing lazy groups; None otherwise (see :meth:`item_index`).
    task_averaged: report the mean over categories beside the overall mean (as
        LongMemEval's official metrics script does).
    stratify_by: a row column that is a design stratum of the items (LongMemEval:
        ``category``, the question type); ``memrun compare`` resamples clusters within
        its values by default. None: no strata.
    session_cut: what K counts in the ``session_*`` columns: ``sessions`` (the first K
        distinct sessions reached, LongMemEval's rule) or ``turns`` (the top K hits,
        credited when one lies in a gold session; the published LoCoMo harnesses).
    preset: the benchmark's evaluation preset when it has several (LongMemEval:
        ``memrun`` or ``official``, :mod:`memrun.metrics.retrieval_official`).
    named_metrics: the named variants the benchmark asks for
        (:data:`memrun.metrics.retrieval.NAMED_VARIANTS`: ``lme_ndcg``, ``evidence_share``).
    records: what a record holds when it is not the benchmark's default
        (:func:`memrun.benchmarks.record_text.records_description`: ``unit=session; text=...``);
        None for the default turn records. The instrument's ``records`` field.
    """

    split: str
    sha256: str | None
    groups: Iterable[Group]
    categories: dict[str, str]
    comparable_categories: list[str] | None
    gold_match: GoldMatch
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    index: list[tuple[str, str]] | None = None
    task_averaged: bool = False
    stratify_by: str | None = None
    session_cut: str = "sessions"
    preset: str | None = None
    named_metrics: tuple[str, ...] = ()
    records: str | None = None

    @property
    def n_items(self) -> int | None:
        """Number of items over all groups; None when lazy groups come without an index."""
        if isinstance(self.groups, list):
            return sum(len(g.items) for g in self.groups)
        return len(self.index) if self.index is not None else None

    def item_index(self) -> list[tuple[str, str]] | None:
        """``(item_id, category)`` per item in file order, without producing lazy groups.

        None when the groups are lazy and the loader gave no :attr:`index`.
        """
        if self.index is not None:
            return self.index
        if isinstance(self.groups, list):
            return [(item.item_id, item.category) for item in self.items()]
        return None

    def items(self) -> Iterator[Item]:
        """All items, in file order."""
        for group in self.groups:
            yield from group.items


def fold(text: str) -> str:
    """``text`` as gold phrases are matched (``substring``): case-folded, ``_`` as a space."""
    return text.casefold().replace("_", " ")


def gold_matches(hit: Hit, gold_keys: Iterable[str], mode: GoldMatch) -> frozenset[str]:
    """Return the gold keys that ``hit`` satisfies under ``mode`` (empty: not gold).

    ``key``: exact equality of ``hit.key`` with a gold key.
    ``substring``: a gold key (case-folded, ``_`` as space) occurs in the hit's key or
    text, case-folded likewise. Raises ValueError for an unknown mode.
    """
    return gold_matcher(gold_keys, mode)(hit)


def gold_match_mode(mode: str | None) -> GoldMatch:
    """``mode`` as read from a saved run (None or empty: ``key``, the default) checked as a
    :data:`GoldMatch`. Raises ValueError for an unknown mode."""
    if not mode or mode == "key":
        return "key"
    if mode == "substring":
        return "substring"
    raise ValueError(f"unknown gold match mode {mode!r} (expected 'key' or 'substring')")


_NO_MATCH: frozenset[str] = frozenset()


def gold_matcher(gold_keys: Iterable[str], mode: GoldMatch) -> Callable[[Hit], frozenset[str]]:
    """:func:`gold_matches` for one item's gold keys, prepared once for all of its hits."""
    gold = tuple(gold_keys)
    if mode == "key":
        singles = {k: frozenset((k,)) for k in gold}
        return lambda hit: singles.get(hit.key, _NO_MATCH)
    if mode == "substring":
        folded = [(k, fold(k)) for k in gold]

        def match(hit: Hit) -> frozenset[str]:
            haystack = fold(hit.key) + "\n" + fold(hit.text)
            return frozenset(k for k, f in folded if f in haystack)

        return match
    raise ValueError(f"unknown gold match mode {mode!r} (expected 'key' or 'substring')")
