"""The items two runs disagree on: ``memrun compare A B --flips``, the flips page of
``memrun view`` and ``memrun report A B``.

A flip is a paired item (:func:`memrun.comparison.pairing.pair`: the comparison's own items,
after its category filter and exclusions) whose score on the gate metric differs between A
and B: a hit in one run and a miss in the other (recall@K), a correct majority label in one
and not the other (accuracy), or any difference of a continuous score (MRR, nDCG, a rubric
judge's mean). So the flips are exactly the wins and losses the verdict counts.

B-wins come first, then B-losses; within each, the largest difference first, then run A's
order. Each flip carries what both runs retrieved (or answered) for the question, from the
runs' own rows (:func:`memrun.report.evidence.evidence`: texts recorded in the run), with
the gold marked, so the page opens to a side-by-side without the dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memrun.comparison.pairing import Paired
from memrun.errors import MemrunError
from memrun.io.reader import RunTable, read_run
from memrun.report.evidence import evidence
from memrun.report.flips import LOSSES as B_LOSSES
from memrun.report.flips import WINS as B_WINS
from memrun.stats.labels import majority_label

SIDE_HITS = 10
"""Hits of each run shown in a flip's side-by-side."""


def flip_list(paired: Paired | None) -> list[dict[str, Any]]:
    """The flips of a comparison: ``item_id``, ``category`` (raw), ``category_label``, ``a``
    and ``b`` (the paired scores: 1/0, or a continuous score), ``delta`` (b - a) and
    ``side`` (:data:`B_WINS` or :data:`B_LOSSES`), B-wins first (module docstring).
    ``paired``: a comparison's (:attr:`memrun.comparison.analysis.Comparison.paired`);
    MemrunError for None, a comparison that kept no pairing."""
    if paired is None:
        raise MemrunError("no flips to list: the comparison kept no pairing of its items")
    differ = np.flatnonzero(paired.a != paired.b)
    if not len(differ):
        return []
    ids = paired.item_ids.take(pa.array(differ)).to_pylist()
    delta = paired.b[differ] - paired.a[differ]
    order = sorted(range(len(differ)), key=lambda i: (delta[i] < 0, -abs(delta[i]), differ[i]))
    out = []
    for i in order:
        cat = paired.category_names[int(paired.categories[differ[i]])]
        out.append({"item_id": ids[i], "category": cat, "category_label": paired.category_labels.get(cat, cat),
                    "a": float(paired.a[differ[i]]), "b": float(paired.b[differ[i]]), "delta": float(delta[i]),
                    "side": B_WINS if delta[i] > 0 else B_LOSSES})
    return out


SIDE_COLUMNS = ("item_id", "repeat", "cluster", "question", "answer", "gold_keys", "gold_texts", "retrieved_keys",
                "retrieved_scores", "retrieved_texts", "first_gold_rank", "error", "reader_answer", "label")
"""The columns a flip's side-by-side reads."""


def _rows_by_item(path: str, ids: Sequence[str]) -> tuple[RunTable, dict[str, list[dict[str, Any]]]]:
    run = read_run(path, columns=SIDE_COLUMNS)
    table = run.table.filter(pc.is_in(run.table.column("item_id"), value_set=pa.array(list(ids), pa.string())))
    out: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        out.setdefault(row["item_id"], []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: int(r.get("repeat") or 0))
    return run, out


def _side(rows: Sequence[Mapping[str, Any]], gold_match: str | None, hits: int) -> dict[str, Any]:
    """One run's view of an item: its hits (gold marked) and gold records, its answers and labels."""
    first = rows[0]
    found = evidence(first, gold_match, hits)
    labels = [str(r["label"]) for r in rows if r.get("label") is not None]
    return {"retrieved": found["retrieved"], "gold_records": found["gold"],
            "first_gold_rank": first.get("first_gold_rank"), "error": first.get("error"),
            "answers": [r.get("reader_answer") for r in rows if r.get("reader_answer") is not None],
            "labels": labels, "label": majority_label(labels) if labels else None}


def side_by_side(flips: Sequence[Mapping[str, Any]], a: str, b: str, hits: int = SIDE_HITS) -> list[dict[str, Any]]:
    """``flips`` (:func:`flip_list`) with the item's ``question``, ``gold`` (answer),
    ``cluster`` and each run's side (``A`` and ``B``: ``retrieved``, ``gold_records``,
    ``first_gold_rank``, ``error``, ``answers``, ``labels``, ``label``), read from the runs
    at ``a`` and ``b``. Raises RunTableError for an unreadable run."""
    ids = [f["item_id"] for f in flips]
    if not ids:
        return []
    run_a, rows_a = _rows_by_item(a, ids)
    run_b, rows_b = _rows_by_item(b, ids)
    out = []
    for f in flips:
        ra, rb = rows_a[f["item_id"]], rows_b[f["item_id"]]
        first = ra[0]
        out.append({**f, "question": first.get("question"), "gold": first.get("answer"),
                    "cluster": first.get("cluster"),
                    "A": _side(ra, run_a.instrument.gold_match, hits), "B": _side(rb, run_b.instrument.gold_match, hits)})
    return out


def counts(flips: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """``{"b_wins": n, "b_losses": n}``."""
    wins = sum(1 for f in flips if f["side"] == B_WINS)
    return {"b_wins": wins, "b_losses": len(flips) - wins}
