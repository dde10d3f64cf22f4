"""What every HTML page shares: the jinja2 environment, the embedded JSON, a run's item rows.

Pages are one self-contained file: styles, the table script and the rows are inlined,
charts are inline SVG, and nothing is fetched (no CDN, no font, no image request).
The rows travel as one JSON array the script pages through, so a 100k-row run builds a
page of rows at a time, never 100k DOM rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memrun.io.reader import RunTable
from memrun.lazy import lazy
from memrun.records import Hit, gold_match_mode, gold_matches
from memrun.report import evidence as evidence_texts
from memrun.stats.labels import ERROR, majority_label

if TYPE_CHECKING:
    import jinja2
else:
    jinja2 = lazy("jinja2")

MAX_TEXT = evidence_texts.MAX_TEXT
"""Characters of each record's text kept in the page (the rest is cut, marked with ...);
the page folds a text past :data:`memrun.report.evidence.FOLD_CHARS`."""

ITEM_COLUMNS = ("item_id", "repeat", "category", "category_label", "question", "answer", "reader_answer", "label",
                "failure_stage", "judge_explanation", "retrieved_keys", "gold_keys", "retrieved_texts", "gold_texts", "error",
                "first_gold_rank", "search_latency_ms", "answer_latency_ms", "context_tokens")


@lru_cache(maxsize=1)
def environment() -> Any:
    """The jinja2 environment over ``memrun/report/templates`` (autoescaped)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("memrun.report", "templates"),
                             autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["pct"] = lambda v: "-" if v is None else f"{100 * float(v):.1f}%"
    env.filters["num"] = lambda v, d=1: "-" if v is None else f"{float(v):.{d}f}"
    return env


def asset(name: str) -> str:
    """A static file under ``templates/`` (the table script, the style sheet) as text."""
    return resources.files("memrun.report").joinpath("templates", name).read_text(encoding="utf-8")


_JS_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                           "\u2028": "\\u2028", "\u2029": "\\u2029"})


def plain(value: Any) -> Any:
    """``value`` as plain JSON types, whatever wrote the table: numpy arrays and scalars
    (a pandas round-trip) become lists and Python numbers, NaN/NaT/inf become None,
    dates and Timestamps ISO strings, bytes text, mappings dicts with string keys."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "tolist") and not isinstance(value, (date, datetime)):  # numpy array or scalar
        return plain(value.tolist())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    try:
        if value != value:  # NaT and other NaN-like values
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, (date, datetime, time)):
        return value.isoformat()
    return str(value)


def embed_json(value: Any) -> str:
    """``value`` as JSON safe anywhere in an HTML page: inside ``<script type="application/json">``,
    an attribute or a JS string. ``<``, ``>``, ``&``, U+2028 and U+2029 are written as
    ``\\uXXXX`` escapes (they only occur inside JSON strings, so the JSON is unchanged), so no
    text can close the script, open a comment or start a tag. Values that are not plain JSON
    (numpy, NaN, Timestamps) go through :func:`plain`. Every page embeds its data with this."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=plain)
    except ValueError:  # a NaN or infinity somewhere: clean the whole value once
        text = json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"))
    return text.translate(_JS_UNSAFE)


def as_int(value: Any) -> int | None:
    """An integer column's value as int, whatever wrote the table (pandas turns an int
    column with nulls into float64 with NaN); None for null, NaN or a non-integral value."""
    value = plain(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value if isinstance(value, int) else None


def render(template: str, **context: Any) -> str:
    """Render a page template with the shared assets."""
    return environment().get_template(template).render(style=asset("report.css"), script=asset("table.js"), **context)


def _short(text: Any) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def marked_keys(keys: Sequence[Any] | None, gold: Sequence[Any] | None, *, mode: str | None = "key",
                texts: Sequence[Any] | None = None, rank: int | None = None) -> list[list[Any]]:
    """``[[key, 1 if gold else 0], ...]`` in rank order (the gold ones are marked in the page).

    A hit is gold by the run's rule (:func:`memrun.records.gold_matches`: ``key`` or
    ``substring``, on the hit's text when the row kept it); the hit at the first gold
    rank the run recorded is gold whatever the page can re-check.
    """
    gold_keys = [str(g) for g in gold or ()]
    texts = list(texts or ())
    out, first = [], None
    for i, k in enumerate(keys or ()):
        hit = Hit(key=str(k), score=0.0, text=str(texts[i]) if i < len(texts) and texts[i] is not None else "")
        out.append([str(k), int(bool(gold_keys) and bool(gold_matches(hit, gold_keys, gold_match_mode(mode))))])
    if rank and 0 < rank <= len(out):
        distinct = list(dict.fromkeys(k for k, _ in out))
        first = distinct[rank - 1] if rank <= len(distinct) else None
    for pair in out:
        pair[1] = pair[1] or int(pair[0] == first)
    return out


def retrieval_outcome(row: Mapping[str, Any], column: str) -> str:
    """A retrieval row's outcome on the headline metric's column: hit, miss, unscored or error."""
    if row.get("error") is not None:
        return "error"
    value = row.get(column)
    if value is None:
        return "unscored"
    return "hit" if value else "miss"


class Texts:
    """Retrieved texts stored once per page: rows hold indices into :attr:`strings`
    (LoCoMo's 19,860 retrieved texts are 4,023 distinct ones)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.strings: list[str] = []

    def ids(self, texts: Sequence[Any] | None) -> list[int | None]:
        """Each text's index (cut at :data:`MAX_TEXT`; None stays None)."""
        out: list[int | None] = []
        for t in texts or ():
            short = _short(t)
            if short is None:
                out.append(None)
                continue
            if short not in self.index:
                self.index[short] = len(self.strings)
                self.strings.append(short)
            out.append(self.index[short])
        return out


def gold_records(row: Mapping[str, Any], mode: str | None, texts: Texts) -> dict[str, Any]:
    """A row's gold records for the page: ``gkeys`` (``[["D2:1 (retrieved at rank 2)", 1], ["D5:3
    (missed)", 0], ...]``, 1 when retrieved) and ``gtexts`` (their texts' indices into
    ``texts``; empty when the run recorded none), from :func:`memrun.report.evidence.evidence`."""
    gold = evidence_texts.evidence(row, mode)["gold"]
    recorded = any(g["text"] is not None for g in gold)
    return {"gkeys": [[f"{g['key']} ({evidence_texts.gold_state(g['rank'])})", int(g["rank"] is not None)]
                      for g in gold],
            "gtexts": texts.ids([g["text"] for g in gold]) if recorded else []}


def item_rows(run: RunTable, *, hit_column: str | None, texts: Texts) -> list[dict[str, Any]]:
    """The page's rows of a run, one per item x repeat, in the run's order.

    Keys: ``id``, ``rep``, ``cat`` (label), ``q``, ``gold``, ``ans``, ``label`` (accuracy:
    the judge's; retrieval: the outcome on ``hit_column``), ``stage``, ``expl``, ``keys``
    (:func:`marked_keys`), ``texts`` (indices into ``texts``), ``gkeys`` and ``gtexts``
    (:func:`gold_records`), ``err``, ``rank``.
    """
    table: pa.Table = run.table
    names = [c for c in (*ITEM_COLUMNS, hit_column) if c and c in table.column_names]
    data = table.select(names).to_pydict()
    n = table.num_rows
    col = {c: data.get(c, [None] * n) for c in (*ITEM_COLUMNS, hit_column or "")}
    accuracy, mode = run.instrument.axis == "accuracy", run.instrument.gold_match
    out = []
    for i in range(n):
        row = {c: col[c][i] for c in col}
        rank = as_int(row["first_gold_rank"])
        out.append({
            "id": row["item_id"], "rep": as_int(row["repeat"]),
            "cat": row["category_label"] or row["category"],
            "q": row["question"], "gold": row["answer"], "ans": row["reader_answer"],
            "label": (row["label"] or ("error" if row["error"] else None)) if accuracy
            else retrieval_outcome(row, hit_column or ""),
            "stage": row["failure_stage"], "expl": row["judge_explanation"],
            "keys": marked_keys(row["retrieved_keys"], row["gold_keys"], mode=mode, texts=row["retrieved_texts"],
                                rank=rank),
            "texts": texts.ids(row["retrieved_texts"]),
            **gold_records(row, mode, texts),
            "err": row["error"], "rank": rank,
        })
    return out


def column_values(run: RunTable, name: str) -> list[float]:
    """A numeric column's non-null values (empty when the run has no such column)."""
    if name not in run.table.column_names:
        return []
    return [float(v) for v in run.table.column(name).to_pylist() if v is not None]


def group_repeats(rows: Sequence[dict[str, Any]], accuracy: bool) -> list[dict[str, Any]]:
    """One row per item from :func:`item_rows`' rows (one per item x repeat), in first-seen
    order: the first repeat's fields, ``label`` the majority label over the repeats
    (:func:`memrun.stats.labels.majority_label`; accuracy axis), ``n_rep`` the number of
    repeats and, when there are several, ``reps``: each repeat's ``rep``, ``ans``, ``label``,
    ``expl``, ``stage`` and ``err``."""
    by_id: dict[Any, dict[str, Any]] = {}
    reps: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_id.setdefault(r["id"], dict(r))
        reps.setdefault(r["id"], []).append(r)
    out = []
    for item_id, row in by_id.items():
        mine = reps[item_id]
        row["n_rep"] = len(mine)
        if accuracy:
            row["label"] = majority_label([r["label"] or ERROR for r in mine])
        if len(mine) > 1:
            row["reps"] = [{k: r.get(k) for k in ("rep", "ans", "label", "expl", "stage", "err")} for r in mine]
            labels = [r["label"] or ERROR for r in mine]
            row["votes"] = ", ".join(f"{n} {lab}" for lab, n in sorted(
                {lab: labels.count(lab) for lab in labels}.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(row)
    return out
