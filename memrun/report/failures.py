"""Render ``memrun failures`` items (from :func:`memrun.commands.failures.failed_items`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape


def print_failures(console: Console, items: Sequence[Mapping[str, Any]], *, total: int, run: str, complete: bool) -> None:
    """One block per item: question, gold, answers, judge explanation, failure stage, hits."""
    if not complete:
        console.print(f"[yellow]{run} did not finish; showing the rows that did[/]")
    for item in items:
        cat = item["category_label"] or item["category"]
        console.rule(f"[bold]{escape(str(item['item_id']))}[/] ({escape(str(cat))}) labels {', '.join(item['labels'])}", align="left")
        date = f" [dim](asked {escape(str(item['question_date']))})[/]" if item.get("question_date") else ""
        console.print(f"[bold]question[/] {escape(str(item['question']))}{date}")
        console.print(f"[bold]gold[/]     {escape(str(item['gold']))}")
        for answer in item["answers"]:
            console.print(f"[bold]answer[/]   {escape(answer)}")
        console.print(f"[bold]judge[/]    {escape(str(item['explanation'] or '-'))}")
        console.print(f"[bold]stage[/]    {item['failure_stage'] or '-'}")
        for rank, hit in enumerate(item["retrieved"], start=1):
            score = "-" if hit["score"] is None else f"{hit['score']:.3f}"
            console.print(f"  {rank:>2}. {escape(str(hit['key']))} ({score}) {escape(str(hit['text'] or ''))[:200]}")
    console.print(f"{len(items)} of {total} failed items shown | {run}")
