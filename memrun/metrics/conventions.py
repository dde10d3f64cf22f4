"""Items a metric credits by a convention rather than by what the arm found, counted.

Some metrics follow a published convention that scores an item well when there is
nothing to score. The value is kept (it is what reproduces published numbers), but
every run counts the items so credited, per metric, and ``memrun compare`` will not
pass on a difference they could make (:func:`credited_mask`). The conventions:

| metric | convention | count |
|---|---|---|
| ``evidence_share@K``, ``session_evidence_share@K`` (LoCoMo's RAG recall) | a question with no evidence counts 1 | ``no_evidence`` |
| the same | a question with no retrieved context counts 1 (the arm found nothing) | ``empty_context`` |
| ``recall_all@K``, ``session_recall_all@K`` under LongMemEval's official preset | a question kept without gold counts 1 (``all`` of an empty gold set is true) | ``empty_gold`` |
| judged accuracy | an abstention question answered by abstaining when nothing was retrieved: right by the benchmark's rule, whatever the arm is (an item whose majority label over its repeats is right and some repeat of which was judged so; the label the item is scored by, :func:`memrun.stats.labels.item_majority`) | ``abstained_on_empty_context`` |

Beside them, two counts that leave a number lower than the arm deserves or hide a
failure: ``unreachable`` (items whose gold no record of their history can match, so
every arm misses them; the row's ``gold_unreachable`` column) and ``empty_searches``
(searches that returned no hit, shown always).

One function decides which rows a convention credits (:func:`credited_mask`), over an
Arrow table for ``memrun compare`` and over the row dicts a run just made for its summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any, Protocol

from memrun.lazy import lazy
from memrun.metrics.columns import RowColumns, column
from memrun.metrics.retrieval import SESSION_PREFIX, item_column_for
from memrun.metrics.retrieval_official import EVIDENCE_SHARE, OFFICIAL_NO_GOLD

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyarrow import compute as pc

    from memrun.stats import labels
else:
    np = lazy("numpy")  # after the items: a run sends its first request without it
    pa = lazy("pyarrow")  # a run loads it on the writer's thread (memrun.io.writer)
    pc = lazy("pyarrow.compute")
    labels = lazy("memrun.stats.labels")  # numpy

ACCURACY = "accuracy"
"""The family name of judged accuracy (``memrun compare`` on the accuracy axis)."""
CONVENTIONS: dict[str, tuple[str, ...]] = {
    EVIDENCE_SHARE: ("no_evidence", "empty_context"),
    f"{SESSION_PREFIX}{EVIDENCE_SHARE}": ("no_evidence", "empty_context"),
    "recall_all": ("empty_gold",),
    f"{SESSION_PREFIX}recall_all": ("empty_gold",),
    ACCURACY: ("abstained_on_empty_context",),
}
"""Metric family -> the conventions that credit its items (see the module docstring)."""
DATASET_CONVENTIONS = frozenset({"no_evidence", "empty_gold"})
"""Conventions that hold for the same items whatever the arm does (the dataset has nothing
to find): counted and shown, but no warning and no hold; the others credit what an arm
did not find."""
WORDS = {
    "no_evidence": "no evidence",
    "empty_context": "nothing retrieved",
    "empty_gold": "all of an empty gold set",
    "abstained_on_empty_context": "abstained with nothing retrieved",
}
"""Each convention in a few words, for the lines a run and a comparison print."""
JUDGE_UNPARSEABLE = "judge: judge reply unparseable"
"""How the error of a row whose judge reply stayed unparseable after its retry begins."""
ABSTENTION_PROMPT = "abstention"
"""The judge prompt abstention items are graded with (``judge.abstention_categories``: LoCoMo's adversarial)."""


def family_of(metric: str) -> str | None:
    """The family (a key of :data:`CONVENTIONS`) of a run-level metric name, or None.

    ``evidence_share@5`` -> ``evidence_share``; ``session_recall_all@10`` ->
    ``session_recall_all``; ``accuracy`` -> ``accuracy``; ``recall@5`` -> None.
    """
    if metric == ACCURACY:
        return ACCURACY
    name = metric.partition("@")[0]
    return name if name in CONVENTIONS else None


class _Columns(Protocol):
    """What :func:`_credited` reads of a run's rows, one bool per row (a null is False
    everywhere, a missing column is all null): an Arrow table's (:class:`_TableColumns`,
    compare) or a list of row dicts' (:class:`_RowColumns`, a run's summary)."""

    n: int
    names: Sequence[str]

    def valid(self, name: str) -> np.ndarray: ...  # not null
    def true(self, name: str) -> np.ndarray: ...  # a true bool
    def empty_list(self, name: str) -> np.ndarray: ...  # a list of no element
    def equals(self, name: str, text: str) -> np.ndarray: ...  # the value, as a string, is ``text``
    def contains(self, name: str, text: str) -> np.ndarray: ...  # a string holding ``text``
    def codes(self, name: str) -> np.ndarray: ...  # int codes, equal values equal, each null its own


class _TableColumns:
    """:class:`_Columns` of an Arrow table, in Arrow compute."""

    def __init__(self, table: pa.Table) -> None:
        self.table, self.n = table, table.num_rows
        self.names: Sequence[str] = table.column_names

    def _column(self, name: str) -> pa.Array:
        if name not in self.names:
            return pa.nulls(self.n)
        col = self.table.column(name)
        return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col

    def _mask(self, name: str, test: Callable[[pa.Array], pa.Array]) -> np.ndarray:
        col = self._column(name)
        if pa.types.is_null(col.type):
            return np.zeros(self.n, dtype=bool)
        return np.asarray(pc.fill_null(test(col), False))

    def valid(self, name: str) -> np.ndarray:
        return np.asarray(self._column(name).is_valid())

    def true(self, name: str) -> np.ndarray:
        return self._mask(name, lambda col: col)

    def empty_list(self, name: str) -> np.ndarray:
        return self._mask(name, lambda col: pc.equal(pc.list_value_length(col), 0))

    def equals(self, name: str, text: str) -> np.ndarray:
        return self._mask(name, lambda col: pc.equal(col.cast(pa.string()), text))

    def contains(self, name: str, text: str) -> np.ndarray:
        return self._mask(name, lambda col: pc.match_substring(col, text))

    def codes(self, name: str) -> np.ndarray:
        col = self._column(name)
        if pa.types.is_null(col.type):
            return np.arange(self.n)
        encoded = pc.dictionary_encode(col)
        out = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        nulls = out < 0
        out[nulls] = len(encoded.dictionary) + np.arange(int(nulls.sum()))
        return out


class _RowColumns:
    """:class:`_Columns` of row dicts, in Python: a run's summary reads a few thousand rows,
    for which importing Arrow's compute functions (~60 ms) cost more than the counting.
    Each column is read out of the rows once (:class:`memrun.metrics.columns.RowColumns`),
    and each mask made once: the families ask for ``error`` and ``retrieved_keys`` again
    and again."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows, self.n = rows, len(rows)
        self.names: Sequence[str] = list(rows[0]) if rows else []
        self.values = RowColumns(rows)
        self._masks: dict[tuple[str, ...], np.ndarray] = {}

    def _cached(self, key: tuple[str, ...], make: Callable[[list[Any]], list[bool]]) -> np.ndarray:
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = np.array(make(self.values[key[1]]), dtype=bool)
        return mask.copy()  # a caller may combine masks in place

    def valid(self, name: str) -> np.ndarray:
        return self._cached(("valid", name), lambda values: [v is not None for v in values])

    def true(self, name: str) -> np.ndarray:
        return self._cached(("true", name), lambda values: [v is not None and bool(v) for v in values])

    def empty_list(self, name: str) -> np.ndarray:
        return self._cached(("empty_list", name), lambda values: [v is not None and len(v) == 0 for v in values])

    def equals(self, name: str, text: str) -> np.ndarray:
        return self._cached(("equals", name, text), lambda values: [v is not None and str(v) == text for v in values])

    def contains(self, name: str, text: str) -> np.ndarray:
        return self._cached(("contains", name, text), lambda values: [v is not None and text in v for v in values])

    def codes(self, name: str) -> np.ndarray:
        seen: dict[Any, int] = {}
        return np.fromiter((seen.setdefault(v, len(seen)) if v is not None else -1 - i
                            for i, v in enumerate(self.values[name])), dtype=np.int64, count=self.n)


def credited_mask(table: pa.Table, family: str) -> dict[str, np.ndarray]:
    """Convention -> per-row mask (shape (rows,), bool) of the rows ``family`` credits by it.

    table: rows of a run (columns of :mod:`memrun.io.schema`; missing ones read as null).
    family: a key of :data:`CONVENTIONS`. Errored rows are never credited (they are left
    out). Evidence share's conventions hold only where its column is filled (LoCoMo).
    Judged accuracy's holds for every row of an item (``item_id``) that its majority label
    over its repeats scores right, some repeat of which was judged right on an abstention
    with nothing retrieved (:func:`_credited_items`).
    Raises KeyError for an unknown family.
    """
    return _credited(_TableColumns(table), family)


def _credited(columns: _Columns, family: str) -> dict[str, np.ndarray]:
    """:func:`credited_mask` over either form of the rows (:class:`_Columns`)."""
    conventions = CONVENTIONS[family]
    ok = ~columns.valid("error")
    empty_context = columns.empty_list("retrieved_keys")
    if family == ACCURACY:
        if not empty_context.any():  # every search found something (most runs): nothing to credit
            return {conventions[0]: np.zeros(columns.n, dtype=bool)}
        # LoCoMo's adversarial items: judged with the abstention prompt
        abstention = columns.true("abstention") | columns.equals("judge_prompt", ABSTENTION_PROMPT)
        return {conventions[0]: _credited_items(columns, ok & abstention & empty_context & columns.equals("label", "correct"))}
    if family.removeprefix(SESSION_PREFIX) == EVIDENCE_SHARE:
        filled = np.zeros(columns.n, dtype=bool)
        for name in columns.names:
            if name.startswith(f"{family}_at_"):
                filled |= columns.valid(name)
        no_evidence = ok & filled & columns.empty_list("gold_keys_raw")
        return {"no_evidence": no_evidence, "empty_context": ok & filled & empty_context & ~no_evidence}
    return {"empty_gold": ok & columns.contains("extra", f'"{OFFICIAL_NO_GOLD}": true')}


def _credited_items(columns: _Columns, rows: np.ndarray) -> np.ndarray:
    """Per row, whether its item is credited: the item's majority label over its repeats
    (:func:`memrun.stats.labels.item_majority`, errored rows ``error``, the label the item
    is scored by) is right, and some row of it is credited (``rows``). Repeat 0 alone
    could be wrong where the majority is right (and the score counts the item) or the
    reverse. No row credited (most runs): none, without the items' majorities."""
    if not rows.any():
        return np.zeros(columns.n, dtype=bool)
    ok = ~columns.valid("error")
    row_labels = np.full(columns.n, labels.LABEL_ORDER.index(labels.ERROR), dtype=np.int64)
    for code, label in enumerate(labels.LABEL_ORDER):
        if label != labels.ERROR:
            row_labels[ok & columns.equals("label", label)] = code
    items = np.unique(columns.codes("item_id"), return_inverse=True)[1].reshape(-1)
    n_items = int(items.max()) + 1 if len(items) else 0
    majority, _, _ = labels.item_majority(row_labels, items, n_items)
    some_row = np.bincount(items, weights=rows, minlength=n_items) > 0
    return ((majority == labels.LABEL_ORDER.index(labels.CORRECT)) & some_row)[items]


def credited_columns(metric: str, axis: str | None) -> list[str]:
    """The columns :func:`credited_mask` reads for ``metric`` (none when it has no convention)."""
    family = ACCURACY if axis == ACCURACY else family_of(metric)
    if family is None:
        return []
    if family == ACCURACY:
        return ["retrieved_keys", "abstention", "judge_prompt", "label", "item_id"]
    if family.removeprefix(SESSION_PREFIX) == EVIDENCE_SHARE:
        return ["retrieved_keys", "gold_keys_raw", item_column_for(metric)]
    return ["extra"]


def run_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts a run's summary shows beside its metrics (module docstring).

    rows: the run's rows (every repeat; retrieval is read on repeat 0, accuracy by each
    item's majority label over its repeats, counted once an item, at repeat 0). On the accuracy axis also ``judge_retried`` (rows whose
    label came from re-asking an unparseable reply) and ``judge_unparseable`` (rows whose
    reply stayed unparseable: errors). Returns ``credited``: ``"<family>@K"`` (``accuracy``
    bare) -> convention -> items, only families with a non-zero count; ``unreachable``:
    items with gold no record can match; ``empty_searches`` and ``n_searches``: repeat-0
    rows whose search returned (the reader or judge may have failed after it), and those
    of them with no hit.
    """
    at_first = [repeat == 0 for repeat in column(rows, "repeat", 0)]
    first = list(compress(rows, at_first))
    if not first:
        return {"credited": {}, "unreachable": 0, "empty_searches": 0, "n_searches": 0}
    columns = _RowColumns(first)
    every = _RowColumns(rows)
    credited: dict[str, dict[str, int]] = {}
    for family in CONVENTIONS:
        if family == ACCURACY and "label" not in first[0]:
            continue
        if family == ACCURACY:  # every repeat decides the item's label: read them all, count at repeat 0
            keep = np.array(at_first, dtype=bool)
            masks = {name: mask[keep] for name, mask in _credited(every, family).items()}
        else:
            masks = _credited(columns, family)
        counts = {name: int(mask.sum()) for name, mask in masks.items() if mask.any()}
        if counts:
            credited[family if family == ACCURACY else f"{family}@K"] = counts
    # a search that returned has its keys (a failed ingest or search has none), whatever failed
    # after it: an item whose reader or judge failed was searched too (HitChecks counts it so)
    searched = [keys for keys in columns.values["retrieved_keys"] if keys is not None]
    judged = {}
    if any("label" in r for r in rows[:1]):
        judged = {"judge_retried": sum(1 for v in every.values["judge_retried"] if v),
                  "judge_unparseable": sum(1 for e in every.values["error"] if e and str(e).startswith(JUDGE_UNPARSEABLE))}
    return {
        **judged,
        "credited": credited,
        "unreachable": sum(1 for n, gold in zip(columns.values["gold_unreachable"], columns.values["gold_keys"])
                           if (n or 0) > 0 and n == len(gold or ())),
        "empty_searches": sum(1 for keys in searched if not keys),
        "n_searches": len(searched),
    }


def caveat_line(counts: Mapping[str, Any]) -> str | None:
    """One short line of what :func:`run_counts` found, or None when nothing was credited
    and nothing is unreachable, e.g. ``credited by convention: evidence_share@K 1986
    (nothing retrieved) | unreachable gold 2``."""
    parts = []
    for family, by in (counts.get("credited") or {}).items():
        parts.append(f"{family} " + ", ".join(f"{n} ({WORDS.get(c, c)})" for c, n in by.items()))
    line = "credited by convention: " + "; ".join(parts) if parts else ""
    if counts.get("unreachable"):
        line += (" | " if line else "") + f"unreachable gold {counts['unreachable']} (every arm misses them)"
    if counts.get("judge_retried") or counts.get("judge_unparseable"):
        line += (" | " if line else "") + (f"judge: {counts.get('judge_retried', 0)} labels from a retry, "
                                          f"{counts.get('judge_unparseable', 0)} unparseable after it (errors)")
    return line or None


def searches_text(counts: Mapping[str, Any]) -> str:
    """``empty searches 277 of 1986 (13.9%)``: shown always, whatever the share; when no
    search returned (an arm that retrieves nothing, or every search failed), says so."""
    empty, n = counts.get("empty_searches", 0), counts.get("n_searches", 0)
    if not n:
        return "empty searches: no search returned (the arm retrieves nothing, or every search failed)"
    return f"empty searches {empty} of {n} ({100 * empty / n:.1f}%)"


def credited_note(counts: Mapping[str, Any], family: str) -> str:
    """`` (1986 credited: nothing retrieved)`` for a family's line, or ``""`` when none were."""
    by = (counts.get("credited") or {}).get(family if family == ACCURACY else f"{family}@K") or {}
    return " (" + ", ".join(f"{n} credited: {WORDS.get(c, c)}" for c, n in by.items()) + ")" if by else ""


def caveat_warnings(counts: Mapping[str, Any]) -> list[str]:
    """One warning line per finding of :func:`run_counts` (what a run prints and saves):
    items credited for what the arm did not find, and unreachable gold."""
    same: dict[tuple[str, int], list[str]] = {}  # one line for the families one convention credits alike
    for family, by in (counts.get("credited") or {}).items():
        for convention, n in by.items():
            if convention not in DATASET_CONVENTIONS:  # the same items in every run of the benchmark: not warned
                same.setdefault((convention, n), []).append(family)
    lines = [f"{', '.join(families)}: {n} items credited by a convention ({WORDS.get(convention, convention)}), not "
             "by what the arm found; the value follows the published code, memrun compare does not pass on them "
             "(docs/reproducing.md)" for (convention, n), families in same.items()]
    if counts.get("unreachable"):
        lines.append(f"{counts['unreachable']} items have gold that no record of their history can match "
                     "(unreachable): every arm misses them; fix the gold (memrun validate lists them)")
    return lines
