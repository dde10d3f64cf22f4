"""``memrun failures <run>``: the items a run missed, with the text that led there.

    memrun failures outputs/locomo/bm25/accuracy/2026-...   [--abstain] [--category 2] [--limit 20] [--hits 5]
    memrun failures outputs/locomo/bm25/recall/2026-...     [--k 5] [--format text|json|md]

Accuracy axis: each item whose majority label is ``wrong`` (with ``--abstain`` also
``abstain``): question, gold answer, the answers given (per repeat), the judge's
explanation, the failure stage, the gold records (marked retrieved at their rank, or
missed) and the top retrieved records (rank, key, score, text, gold marked).

Recall axis: each scored item with no gold record in the top K (``hit_at_K`` false; K the
run's headline cut-off unless ``--k`` names one): question, gold answer, the gold records'
text and the top hits' text. Errored items and items without retrieval gold are not
misses (they are counted apart on the last line).

Items are grouped by category, in the run's order within each. ``--format json`` prints
one JSON object per item (``--json`` is the same), ``--format md`` a markdown document.
Texts are the run's own (``gold_texts``, ``retrieved_texts``): no dataset is read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from memrun.commands.usage import Parser, at_least
from memrun.errors import MemrunError, RunTableError
from memrun.io.reader import RunTable, read_run
from memrun.metrics.accuracy import item_outcomes
from memrun.metrics.by_category import raw_category
from memrun.metrics.intervals import retrieval_headline_metric
from memrun.metrics.retrieval import item_column_for, measured_ks
from memrun.report.evidence import evidence
from memrun.report.failures import by_category, counts_line, markdown_failures, print_failures
from memrun.stats.labels import ABSTAIN, WRONG


def _base(first: Mapping[str, Any], gold_match: str | None, hits: int) -> dict[str, Any]:
    """The fields both axes show: the item, its gold and its top ``hits`` hits with text."""
    found = evidence(first, gold_match, hits)
    return {
        "item_id": first.get("item_id"),
        "category": first.get("category"),
        "category_label": first.get("category_label"),
        "cluster": first.get("cluster"),
        "question": first.get("question"),
        "question_date": first.get("question_date"),
        "gold": first.get("answer"),
        "gold_records": found["gold"],
        "retrieved": found["retrieved"],
    }


def failed_items(
    rows: Sequence[Mapping[str, Any]], *, labels: Sequence[str] = (WRONG,), category: str | None = None, hits: int = 5,
    gold_match: str | None = "key",
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Accuracy axis: (one dict per failed item (majority label in ``labels``), in run order;
    counts of the items that are not listed, by majority label: ``correct``, ``error``, and
    ``abstain`` unless ``labels`` lists it), as :func:`missed_items` gives the recall axis's.

    Keys: item_id, category, category_label, cluster, question, question_date, gold (the
    gold answer), gold_records (key, text, rank: see :func:`memrun.report.evidence.evidence`),
    labels, answers (distinct, in repeat order), explanation (of the first repeat carrying the
    majority label), failure_stage, retrieved (top ``hits``: rank, key, score, text, gold).
    """
    out, counts = [], {"correct": 0, "error": 0, **({} if ABSTAIN in labels else {"abstain": 0})}
    for outcome in item_outcomes(rows):
        if category is not None and outcome["category"] != category:
            continue
        if outcome["majority"] not in labels:
            if outcome["majority"] in counts:
                counts[outcome["majority"]] += 1
            continue
        first = outcome["rows"][0]
        decisive = next(r for r in outcome["rows"] if r.get("label") == outcome["majority"])
        out.append({
            **_base(first, gold_match, hits),
            "labels": outcome["labels"],
            "answers": list(dict.fromkeys(r.get("reader_answer") or "" for r in outcome["rows"])),
            "explanation": decisive.get("judge_explanation"),
            "failure_stage": outcome["failure_stage"],
        })
    return out, counts


def missed_items(rows: Sequence[Mapping[str, Any]], column: str, *, category: str | None = None, hits: int = 5,
                 gold_match: str | None = "key") -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Recall axis: (one dict per item whose ``column`` (``hit_at_K``) is false, in run order;
    counts of the items that are not misses: ``hit``, ``error``, ``unscored``).

    An item's first row is read (retrieval runs once per item). Keys: those of
    :func:`failed_items` less labels, answers, explanation and failure_stage, plus
    ``first_gold_rank`` (beyond K, or None when no gold was retrieved at all).
    """
    seen: set[Any] = set()
    out, counts = [], {"hit": 0, "error": 0, "unscored": 0}
    for row in rows:
        if row.get("item_id") in seen:
            continue
        seen.add(row.get("item_id"))
        if category is not None and row.get("category") != category:
            continue
        value = row.get(column)
        if row.get("error") is not None:
            counts["error"] += 1
        elif value is None:
            counts["unscored"] += 1
        elif value:
            counts["hit"] += 1
        else:
            out.append({**_base(row, gold_match, hits), "first_gold_rank": row.get("first_gold_rank")})
    return out, counts


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun failures",
                                     description="Show the items a run missed, with the text behind them.")
    parser.add_argument("run", help="a run folder or its items.parquet")
    parser.add_argument("--abstain", action="store_true", help="accuracy axis: also items whose majority label is abstain")
    parser.add_argument("--k", type=at_least(1), default=None,
                        help="recall axis: a miss has no gold in the top K (default: the run's headline K)")
    parser.add_argument("--category", help="only this category: raw (e.g. 2) or its label (e.g. temporal)")
    parser.add_argument("--limit", type=at_least(0), default=None, help="show at most this many items")
    parser.add_argument("--hits", type=at_least(0), default=5, help="retrieved records shown per item (default 5)")
    parser.add_argument("--format", choices=("text", "json", "md"), default="text",
                        help="text (default), json (one object per item and line) or md (markdown)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    return parser


def _recall_column(run: RunTable, k: int | None) -> tuple[str, str]:
    """(the hit_at_K column, recall@K) a recall run's misses are read from: ``k``, or the
    run's headline K (:func:`memrun.metrics.intervals.retrieval_headline_metric`). MemrunError
    when the run did not measure that K: not one of its ``ks``, or past its ``arm.top_k``,
    whose column is null in every row (:func:`memrun.metrics.retrieval.measured_ks`): read as
    misses, it listed no item, as if every item lacked gold; with no K measured (``arm.top_k``
    below every K), MemrunError without ``--k`` too."""
    inst = run.instrument
    ks = inst.ks or [5]
    measured = measured_ks(ks, inst.top_k)
    if k is None and not measured:  # arm.top_k below every K: no recall@K column holds a value
        raise MemrunError(f"memrun failures: {run.path} measured no recall@K: its arm.top_k={inst.top_k} retrieved "
                          f"fewer hits than its smallest K ({min(ks)}); re-run with arm.top_k at least {min(ks)}")
    metric = f"recall@{k}" if k is not None else retrieval_headline_metric(ks, inst.top_k)
    if not metric.startswith("recall@"):
        metric = f"recall@{max(measured)}"
    column = item_column_for(metric)
    asked = int(metric.split("@")[1])
    if column not in run.table.column_names or asked not in measured:
        choose = f"choose --k from {', '.join(str(x) for x in measured)}" if measured else \
            "re-run with arm.top_k at least the smallest of its ks"
        if asked in ks and inst.top_k is not None:  # a K past the depth: its column is null in every row
            raise MemrunError(f"memrun failures: {run.path} did not measure {metric}: its arm.top_k={inst.top_k} "
                              f"retrieved {inst.top_k} hits, too few for K={asked}; {choose}")
        raise MemrunError(f"memrun failures: {run.path} did not measure {metric} (its ks: "
                          f"{', '.join(str(x) for x in ks)}); {choose}")
    return column, metric


def _raw_category(run: RunTable, asked: str) -> str:
    """The raw category ``--category`` names: itself, or the raw category whose label it is
    (``multi-hop`` for LoCoMo's ``1``). MemrunError naming the run's categories when no row
    has it: an empty listing would read as "no misses" (it printed "0 of 0 items")."""
    table = run.table
    raws = table.column("category").to_pylist() if "category" in table.column_names else []
    labels = table.column("category_label").to_pylist() if "category_label" in table.column_names else [None] * len(raws)
    pairs = dict(zip(raws, labels))
    if (raw := raw_category(pairs, asked)) in pairs:
        return raw
    present = ", ".join(f"{raw} ({label})" if label and label != raw else str(raw) for raw, label in sorted(
        pairs.items(), key=lambda p: str(p[0])))
    raise MemrunError(f"memrun failures: --category {asked}: no item of {run.path} has it; its categories: "
                      f"{present or 'none'}")


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code. Raises RunTableError for a missing run,
    MemrunError for a --k the run did not measure."""
    args = _parser().parse_args(argv)
    fmt = "json" if args.json else args.format
    run = read_run(args.run)
    inst = run.instrument
    if args.category is not None:
        args.category = _raw_category(run, args.category)
    if inst.axis == "accuracy":
        if args.k is not None:
            raise MemrunError("memrun failures: --k reads a recall-axis run; an accuracy run's misses are its "
                              "wrong answers (add --abstain for abstentions)")
        labels = (WRONG, ABSTAIN) if args.abstain else (WRONG,)
        items, counts = failed_items(run.table.to_pylist(), labels=labels, category=args.category, hits=args.hits,
                                     gold_match=inst.gold_match)
        what = "failed items"
    elif inst.axis == "recall":
        column, metric = _recall_column(run, args.k)
        items, counts = missed_items(run.table.to_pylist(), column, category=args.category, hits=args.hits,
                                     gold_match=inst.gold_match)
        what = f"items with no gold in the top {metric.split('@')[1]} ({metric} misses)"
    else:
        raise RunTableError(f"{args.run}: a {inst.axis}-axis run has no misses to show")
    total = len(items)
    unfinished = run.unfinished()  # why its rows are not every item's (a partial merge, one shard, ...)
    if unfinished and inst.error:  # why it stopped, as the run said it (a failed run's first error)
        unfinished = [*unfinished, f"recorded the error: {inst.error}"]
    shown = by_category(items)[: args.limit] if args.limit is not None else by_category(items)
    if fmt == "json":
        for item in shown:
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
        # what the text and markdown say around the items goes to stderr: stdout stays one item a line
        if unfinished:  # as the text says it
            sys.stderr.write(f"memrun: warning: {run.path} {' and '.join(unfinished)}; writing the rows it wrote\n")
        sys.stderr.write(f"memrun failures: {len(shown)} of {total} {what} written{counts_line(counts)} | {run.path}\n")
    elif fmt == "md":
        sys.stdout.write(markdown_failures(shown, total=total, run=str(run.path), what=what, counts=counts,
                                           unfinished=unfinished))
    else:
        print_failures(Console(), shown, total=total, run=str(run.path), unfinished=unfinished, what=what,
                       counts=counts)
    return 0
