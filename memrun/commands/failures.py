"""``memrun failures <run>``: the items an accuracy run got wrong, with what led there.

    memrun failures outputs/locomo/bm25/accuracy/2026-...   [--abstain] [--category 2] [--limit 20] [--hits 5] [--json]

For each item whose majority label is ``wrong`` (with ``--abstain`` also ``abstain``):
question, gold, the answers given (per repeat), the judge's explanation, the failure
stage, and the top retrieved records (key, score, text). ``--json`` prints one JSON
object per item instead of the table.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from memrun.errors import RunTableError
from memrun.io.reader import read_run
from memrun.metrics.accuracy import item_outcomes
from memrun.report.failures import print_failures
from memrun.stats.labels import ABSTAIN, WRONG


def failed_items(
    rows: Sequence[Mapping[str, Any]], *, labels: Sequence[str] = (WRONG,), category: str | None = None, hits: int = 5
) -> list[dict[str, Any]]:
    """One dict per failed item (majority label in ``labels``), in run order.

    Keys: item_id, category, category_label, question, question_date, gold, labels,
    answers (distinct, in repeat order), explanation (of the first repeat carrying the
    majority label), failure_stage, retrieved (top ``hits``: key, score, text).
    """
    out = []
    for outcome in item_outcomes(rows):
        if outcome["majority"] not in labels or (category is not None and outcome["category"] != category):
            continue
        first = outcome["rows"][0]
        decisive = next(r for r in outcome["rows"] if r.get("label") == outcome["majority"])
        keys = first.get("retrieved_keys") or []
        scores = first.get("retrieved_scores") or [None] * len(keys)
        texts = first.get("retrieved_texts") or [""] * len(keys)
        answers = list(dict.fromkeys(r.get("reader_answer") or "" for r in outcome["rows"]))
        out.append(
            {
                "item_id": outcome["item_id"],
                "category": outcome["category"],
                "category_label": first.get("category_label"),
                "question": first.get("question"),
                "question_date": first.get("question_date"),
                "gold": first.get("answer"),
                "labels": outcome["labels"],
                "answers": answers,
                "explanation": decisive.get("judge_explanation"),
                "failure_stage": outcome["failure_stage"],
                "retrieved": [
                    {"key": k, "score": s, "text": t} for k, s, t in list(zip(keys, scores, texts))[:hits]
                ],
            }
        )
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memrun failures", description="Show the items an accuracy run got wrong.")
    parser.add_argument("run", help="a run folder or its items.parquet")
    parser.add_argument("--abstain", action="store_true", help="also show items whose majority label is abstain")
    parser.add_argument("--category", help="only this raw category (e.g. 2)")
    parser.add_argument("--limit", type=int, default=None, help="show at most this many items")
    parser.add_argument("--hits", type=int, default=5, help="retrieved records shown per item (default 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    return parser


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code. Raises RunTableError for a missing or non-accuracy run."""
    args = _parser().parse_args(argv)
    run = read_run(args.run)
    if run.instrument.axis != "accuracy":
        raise RunTableError(f"{args.run}: a {run.instrument.axis}-axis run has no answers; run with axis=accuracy")
    labels = (WRONG, ABSTAIN) if args.abstain else (WRONG,)
    items = failed_items(run.table.to_pylist(), labels=labels, category=args.category, hits=args.hits)
    total = len(items)
    items = items[: args.limit] if args.limit is not None else items
    if args.json:
        for item in items:
            print(json.dumps(item, ensure_ascii=False))
    else:
        print_failures(Console(), items, total=total, run=str(run.path), complete=run.complete)
    return 0
