"""The text behind an item's keys, as every view of a run shows it.

A run stores, per row, each hit's text (``retrieved_texts``, rank order) and each gold
record's text (``gold_texts``, ``gold_keys`` order), so ``memrun view``, ``memrun report``
and ``memrun failures`` show the same text from the Parquet file alone, with no dataset at
hand. :func:`evidence` turns one row into the gold records (each marked with the rank it
was retrieved at, or as missed) and the retrieved records (each marked gold or not); the
pages and the terminal fold a record longer than :data:`FOLD_CHARS`.

Runs written before the texts were recorded have neither column: keys and scores are
shown without text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrun.records import Hit, gold_matcher
from memrun.report import md

FOLD_CHARS = 600
"""A record's text longer than this is folded: its first :data:`FOLD_CHARS` characters
shown, the rest behind a toggle (``<details>`` in the pages and markdown)."""

MAX_TEXT = 20_000
"""Characters of one record's text a page or listing keeps (the rest cut, marked ``...``)."""


def cut(text: Any, limit: int = MAX_TEXT) -> str | None:
    """``text`` as a string of at most ``limit`` characters plus ``...``; None stays None."""
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _list(value: Any) -> list[Any]:
    return list(value) if value is not None else []


def evidence(row: Mapping[str, Any], gold_match: str | None = "key", hits: int | None = None) -> dict[str, Any]:
    """The gold and retrieved records of one row (a dict of :mod:`memrun.io.schema` columns).

    Returns ``{"gold": [...], "retrieved": [...], "has_texts": bool}``:

    - ``gold``: one dict per gold key, ``key``, ``text`` (None when the run did not record
      it, or the key names no record), ``rank`` (1-based rank of the first hit that
      satisfies it under ``gold_match``, None: missed);
    - ``retrieved``: the first ``hits`` hits (all when None), ``rank``, ``key``, ``score``,
      ``text`` (None when not recorded) and ``gold`` (the hit satisfies a gold key);
    - ``has_texts``: the row recorded any text at all.
    """
    keys = [str(k) for k in _list(row.get("retrieved_keys"))]
    scores = _list(row.get("retrieved_scores"))
    texts = _list(row.get("retrieved_texts"))
    gold_keys = [str(g) for g in _list(row.get("gold_keys"))]
    gold_texts = _list(row.get("gold_texts"))
    match = gold_matcher(gold_keys, "substring" if gold_match == "substring" else "key")
    first_rank: dict[str, int] = {}
    retrieved = []
    for i, key in enumerate(keys):
        text = texts[i] if i < len(texts) else None
        satisfied = match(Hit(key, 0.0, "" if text is None else str(text))) if gold_keys else frozenset()
        for g in satisfied:
            first_rank.setdefault(g, i + 1)
        if hits is None or i < hits:
            retrieved.append({"rank": i + 1, "key": key, "score": scores[i] if i < len(scores) else None,
                              "text": None if text is None else str(text), "gold": bool(satisfied)})
    gold = [{"key": g, "text": None if i >= len(gold_texts) or gold_texts[i] is None else str(gold_texts[i]),
             "rank": first_rank.get(g)} for i, g in enumerate(gold_keys)]
    has_texts = any(t is not None for t in texts) or any(t is not None for t in gold_texts)
    return {"gold": gold, "retrieved": retrieved, "has_texts": has_texts}


def gold_state(rank: int | None) -> str:
    """How a gold record is marked: ``retrieved at rank N`` or ``missed``."""
    return "missed" if rank is None else f"retrieved at rank {rank}"


def fold(text: str | None, limit: int = FOLD_CHARS) -> tuple[str, str]:
    """(shown, folded) parts of ``text``: the first ``limit`` characters and the rest."""
    text = text or ""
    if len(text) <= limit:
        return text, ""
    space = text.rfind(" ", int(limit * 0.8), limit)  # fold between words when one ends near the limit
    at = space if space > 0 else limit
    return text[:at], text[at:]


def folded_lines(text: str | None, limit: int = FOLD_CHARS) -> str:
    """``text`` for a terminal: whole when short, else its first ``limit`` characters and how
    many more there are."""
    shown, rest = fold(text, limit)
    return shown if not rest else f"{shown}... [{len(rest)} more characters]"


def markdown_text(text: str | None, limit: int = FOLD_CHARS) -> str:
    """``text`` for one markdown line (:func:`memrun.report.md.inline`: no markup of its
    own, no mention); longer than ``limit``: the rest folded in a ``<details>`` element."""
    shown, rest = fold(text, limit)
    if not rest:
        return md.inline(shown)
    return f"<details><summary>{md.inline(shown)}...</summary>{md.inline(rest)}</details>"

