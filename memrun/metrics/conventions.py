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
| judged accuracy | an abstention question answered by abstaining when nothing was retrieved: right by the benchmark's rule, whatever the arm is | ``abstained_on_empty_context`` |

Beside them, two counts that leave a number lower than the arm deserves or hide a
failure: ``unreachable`` (items whose gold no record of their history can match, so
every arm misses them; the row's ``gold_unreachable`` column) and ``empty_searches``
(searches that returned no hit, shown always).

Rows are read columnar (Arrow), so the same functions serve a run's summary and
``memrun compare``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy
from memrun.metrics.retrieval import SESSION_PREFIX, item_column_for
from memrun.metrics.retrieval_official import EVIDENCE_SHARE, OFFICIAL_NO_GOLD

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyarrow import compute as pc
else:
    np = lazy("numpy")  # after the items: a run sends its first request without it
    pa = lazy("pyarrow")  # a run loads it on the writer's thread (memrun.io.writer)
    pc = lazy("pyarrow.compute")

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
COLUMNS = ("retrieved_keys", "gold_keys_raw", "extra", "abstention", "judge_prompt", "label", "error", "repeat")
"""The row columns the conventions read."""


def family_of(metric: str) -> str | None:
    """The family (a key of :data:`CONVENTIONS`) of a run-level metric name, or None.

    ``evidence_share@5`` -> ``evidence_share``; ``session_recall_all@10`` ->
    ``session_recall_all``; ``accuracy`` -> ``accuracy``; ``recall@5`` -> None.
    """
    if metric == ACCURACY:
        return ACCURACY
    name = metric.partition("@")[0]
    return name if name in CONVENTIONS else None


def _column(table: pa.Table, name: str, length: int) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(length)
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _empty_list(col: pa.Array) -> np.ndarray:
    """True where a list column holds an empty list (null: False)."""
    if pa.types.is_null(col.type):
        return np.zeros(len(col), dtype=bool)
    return np.asarray(pc.fill_null(pc.equal(pc.list_value_length(col), 0), False))


def _true(col: pa.Array) -> np.ndarray:
    if pa.types.is_null(col.type):
        return np.zeros(len(col), dtype=bool)
    return np.asarray(pc.fill_null(col, False))


def credited_mask(table: pa.Table, family: str) -> dict[str, np.ndarray]:
    """Convention -> per-row mask (shape (rows,), bool) of the rows ``family`` credits by it.

    table: rows of a run (columns of :mod:`memrun.io.schema`; missing ones read as null).
    family: a key of :data:`CONVENTIONS`. Errored rows are never credited (they are left
    out). Evidence share's conventions hold only where its column is filled (LoCoMo).
    Raises KeyError for an unknown family.
    """
    conventions = CONVENTIONS[family]
    n = table.num_rows
    ok = ~np.asarray(_column(table, "error", n).is_valid())
    empty_context = _empty_list(_column(table, "retrieved_keys", n))
    if family == ACCURACY:
        prompt = _column(table, "judge_prompt", n)  # LoCoMo's adversarial items: judged with the abstention prompt
        by_prompt = (np.zeros(n, dtype=bool) if pa.types.is_null(prompt.type) else
                     np.asarray(pc.fill_null(pc.equal(prompt.cast(pa.string()), ABSTENTION_PROMPT), False)))
        abstention = _true(_column(table, "abstention", n)) | by_prompt
        correct = np.asarray(pc.fill_null(pc.equal(_column(table, "label", n).cast(pa.string()), "correct"), False))
        return {conventions[0]: ok & abstention & empty_context & correct}
    if family.removeprefix(SESSION_PREFIX) == EVIDENCE_SHARE:
        filled = np.zeros(n, dtype=bool)
        for name in table.column_names:
            if name.startswith(f"{family}_at_"):
                filled |= np.asarray(table.column(name).is_valid())
        no_evidence = ok & filled & _empty_list(_column(table, "gold_keys_raw", n))
        return {"no_evidence": no_evidence, "empty_context": ok & filled & empty_context & ~no_evidence}
    extra = _column(table, "extra", n)
    flagged = (np.zeros(n, dtype=bool) if pa.types.is_null(extra.type) else
               np.asarray(pc.fill_null(pc.match_substring(extra, f'"{OFFICIAL_NO_GOLD}": true'), False)))
    return {"empty_gold": ok & flagged}


def credited_columns(metric: str, axis: str | None) -> list[str]:
    """The columns :func:`credited_mask` reads for ``metric`` (none when it has no convention)."""
    family = ACCURACY if axis == ACCURACY else family_of(metric)
    if family is None:
        return []
    if family == ACCURACY:
        return ["retrieved_keys", "abstention", "judge_prompt", "label"]
    if family.removeprefix(SESSION_PREFIX) == EVIDENCE_SHARE:
        return ["retrieved_keys", "gold_keys_raw", item_column_for(metric)]
    return ["extra"]


def run_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts a run's summary shows beside its metrics (module docstring).

    rows: the run's rows (every repeat; retrieval is read on repeat 0, accuracy on every
    row's item once, at repeat 0). On the accuracy axis also ``judge_retried`` (rows whose
    label came from re-asking an unparseable reply) and ``judge_unparseable`` (rows whose
    reply stayed unparseable: errors). Returns ``credited``: ``"<family>@K"`` (``accuracy``
    bare) -> convention -> items, only families with a non-zero count; ``unreachable``:
    items with gold no record can match; ``empty_searches`` and ``n_searches``: repeat-0
    rows that searched without error, and those of them with no hit.
    """
    first = [r for r in rows if r.get("repeat", 0) == 0]
    if not first:
        return {"credited": {}, "unreachable": 0, "empty_searches": 0, "n_searches": 0}
    names = [c for c in COLUMNS if any(c in r for r in first[:1])]
    names += sorted({c for c in first[0] if any(c.startswith(f"{f}_at_") for f in CONVENTIONS)})
    table = pa.Table.from_pylist([{c: r.get(c) for c in names} for r in first])
    credited: dict[str, dict[str, int]] = {}
    for family in CONVENTIONS:
        if family == ACCURACY and "label" not in table.column_names:
            continue
        counts = {name: int(mask.sum()) for name, mask in credited_mask(table, family).items() if mask.any()}
        if counts:
            credited[family if family == ACCURACY else f"{family}@K"] = counts
    searched = [r for r in first if r.get("error") is None and r.get("retrieved_keys") is not None]
    judged = {}
    if any("label" in r for r in rows[:1]):
        judged = {"judge_retried": sum(1 for r in rows if r.get("judge_retried")),
                  "judge_unparseable": sum(1 for r in rows if str(r.get("error") or "").startswith(JUDGE_UNPARSEABLE))}
    return {
        **judged,
        "credited": credited,
        "unreachable": sum(1 for r in first if (r.get("gold_unreachable") or 0) > 0
                           and r.get("gold_unreachable") == len(r.get("gold_keys") or ())),
        "empty_searches": sum(1 for r in searched if not r["retrieved_keys"]),
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
    """``empty searches 277 of 1986 (13.9%)``: shown always, whatever the share."""
    empty, n = counts.get("empty_searches", 0), counts.get("n_searches", 0)
    return f"empty searches {empty} of {n}" + (f" ({100 * empty / n:.1f}%)" if n else "")


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
