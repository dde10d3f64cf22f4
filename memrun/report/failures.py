"""Render ``memrun failures`` items (from :mod:`memrun.commands.failures`): a terminal listing
and a markdown document, both grouped by category, both showing the same text (a record
longer than :data:`memrun.report.evidence.FOLD_CHARS` folded)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

from rich.console import Console
from rich.markup import escape

from memrun.metrics.by_category import category_order
from memrun.report import md
from memrun.report.evidence import folded_lines, gold_state, markdown_text


def by_category(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``items`` grouped by category (numeric categories in order, then by name), the run's
    order kept within each."""
    return sorted(items, key=lambda i: category_order(str(i.get("category"))))


def _category(item: Mapping[str, Any]) -> str:
    cat, label = str(item.get("category")), item.get("category_label")
    return cat if not label or label == cat else f"{cat} {label}"


def counts_line(counts: Mapping[str, int] | None) -> str:
    """The items not listed, so that 'N of N shown' never stands without the run's size:
    recall (``hit``, ``error``, ``unscored``) or accuracy (``correct``, ``error``, ``abstain``)."""
    if not counts:
        return ""
    if "hit" in counts:
        return f" | not misses: {counts['hit']} hit, {counts['error']} errored (excluded), " \
               f"{counts['unscored']} without retrieval gold (not scored)"
    abstained = f", {counts['abstain']} abstained (--abstain lists them)" if "abstain" in counts else ""
    return f" | not failures: {counts['correct']} correct{abstained}, {counts['error']} errored (excluded)"


def print_failures(console: Console, items: Sequence[Mapping[str, Any]], *, total: int, run: str,
                   unfinished: Sequence[str] = (), what: str = "failed items",
                   counts: Mapping[str, int] | None = None) -> None:
    """One block per item under a rule per category: question, gold answer, gold records
    (retrieved at rank N, or missed), answers, judge explanation and failure stage
    (accuracy axis), and the top hits with rank, score and text (gold marked). ``unfinished``:
    why the run is not whole (:meth:`memrun.io.reader.RunTable.unfinished`), said first."""
    if unfinished:
        console.print(f"[yellow]{escape(run)} {escape(' and '.join(unfinished))}; showing the rows it wrote[/]")
    for name, group in groupby(items, key=_category):
        block = list(group)
        console.rule(f"[bold]category {escape(name)}[/] ({len(block)} shown)", align="left")
        for item in block:
            _print_item(console, item)
    console.print(f"{len(items)} of {total} {what} shown{counts_line(counts)} | {escape(run)}")


def _print_item(console: Console, item: Mapping[str, Any]) -> None:
    labels = f" labels {', '.join(item['labels'])}" if item.get("labels") else ""
    console.print(f"\n[bold]{escape(str(item['item_id']))}[/]{labels}")
    date = f" [dim](asked {escape(str(item['question_date']))})[/]" if item.get("question_date") else ""
    console.print(f"[bold]question[/] {escape(str(item['question']))}{date}")
    console.print(f"[bold]gold[/]     {escape(str(item['gold']))}")
    for g in item.get("gold_records") or ():
        mark = "[green]" if g["rank"] is not None else "[red]"
        console.print(f"  gold {escape(g['key'])} {mark}{gold_state(g['rank'])}[/]: "
                      f"{escape(folded_lines(g['text']) if g['text'] is not None else '(no text recorded)')}")
    for answer in item.get("answers") or ():
        console.print(f"[bold]answer[/]   {escape(answer)}")
    if "explanation" in item:
        console.print(f"[bold]judge[/]    {escape(str(item['explanation'] or '-'))}")
        console.print(f"[bold]stage[/]    {item['failure_stage'] or '-'}")
    for hit in item["retrieved"]:
        score = "-" if hit["score"] is None else f"{hit['score']:.3f}"
        gold = " [green]GOLD[/]" if hit.get("gold") else ""
        text = escape(folded_lines(hit["text"])) if hit.get("text") is not None else "[dim](no text recorded)[/]"
        console.print(f"  {hit['rank']:>2}. {escape(str(hit['key']))} ({score}){gold} {text}")


def markdown_failures(items: Sequence[Mapping[str, Any]], *, total: int, run: str, what: str,
                      counts: Mapping[str, int] | None, unfinished: Sequence[str] = ()) -> str:
    """The same listing as a markdown document: a heading per category, a section per item."""
    lines = [f"# memrun failures: {md.inline(run)}", ""]
    if unfinished:
        lines += [f"**This run {md.inline(' and '.join(unfinished))}: the rows it wrote are shown.**", ""]
    lines += [f"{len(items)} of {total} {what} shown{counts_line(counts)}", ""]
    for name, group in groupby(items, key=_category):
        lines += [f"## category {md.inline(name)}", ""]
        for item in group:
            lines += _markdown_item(item)
    return "\n".join(lines) + "\n"


def _markdown_item(item: Mapping[str, Any]) -> list[str]:
    out = [f"### {md.inline(item['item_id'])}", "", f"- **question** {md.inline(item['question'] or '-')}",
           f"- **gold answer** {md.inline(item['gold'] or '-')}"]
    if item.get("labels"):
        out.append(f"- **labels** {md.inline(', '.join(item['labels']))}")
    for answer in item.get("answers") or ():
        out.append(f"- **answer** {md.inline(answer or '-')}")
    if "explanation" in item:
        out.append(f"- **judge** {md.inline(item['explanation'] or '-')}; **stage** {md.inline(item['failure_stage'] or '-')}")
    for g in item.get("gold_records") or ():
        text = markdown_text(g["text"]) if g["text"] is not None else "(no text recorded)"
        out.append(f"- **gold {md.inline(g['key'])}** ({gold_state(g['rank'])}): {text}")
    out.append("")
    for hit in item["retrieved"]:
        score = "-" if hit["score"] is None else f"{hit['score']:.3f}"
        gold = " **gold**" if hit.get("gold") else ""
        text = markdown_text(hit["text"]) if hit.get("text") is not None else "(no text recorded)"
        out.append(f"{hit['rank']}\\. {md.inline(hit['key'])} ({score}){gold}: {text}  ")
    return out + [""]
