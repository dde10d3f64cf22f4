"""Render :func:`memrun.metrics.by_category.mean_by_category` the way LongMemEval reports it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table

from memrun.report.run_summary import pct


def mean_by_category_table(result: Mapping[str, Any], title: str, metric: str = "accuracy") -> Table:
    """A rich Table: one row per category, then task-averaged, overall and abstention (percent)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("category", no_wrap=True)
    table.add_column("n", justify="right")
    table.add_column(metric, justify="right")
    for cat, block in result["per_category"].items():
        name = f"{cat} {block['label']}" if block["label"] != cat else cat
        table.add_row(name, str(block["n"]), pct(block["mean"]))
    n_categories = len(result["per_category"])
    table.add_row("task_averaged", f"{n_categories} cat.", pct(result["task_averaged"]), style="bold")
    table.add_row("overall", str(sum(b["n"] for b in result["per_category"].values())), pct(result["overall"]), style="bold")
    table.add_row("abstention", str(result["abstention"]["n"]), pct(result["abstention"]["mean"]))
    if result.get("n_left_out"):
        table.caption = f"{result['n_left_out']} items left out (errors or not scored)"
    return table
