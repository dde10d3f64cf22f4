"""Render a run's summary (from :func:`memrun.metrics.by_category.summarize_by_granularity`) as tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table


def pct(value: Any) -> str:
    """A fraction as percent with one decimal; ``-`` for None."""
    return "-" if value is None else f"{100 * float(value):.1f}"


def percent(value: Any) -> str:
    """:func:`pct` with its sign (``12.5%``), or ``-`` for None (not ``-%``)."""
    return "-" if value is None else f"{pct(value)}%"


def retrieval_table(summary: Mapping[str, Any], ks: list[int], title: str) -> Table:
    """A rich Table: one row per overall slice and category, metrics in percent."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("slice", no_wrap=True)
    table.add_column("n", justify="right")
    at = "\n@" if len(ks) > 4 else "@"  # many cut-offs: two-line headers keep the table narrow
    for k in ks:
        table.add_column(f"recall{at}{k}", justify="right")
    table.add_column(f"recall_all{at}{ks[-1]}", justify="right")
    table.add_column("MRR", justify="right")
    table.add_column(f"nDCG{at}{ks[-1]}", justify="right")

    def add(name: str, block: Mapping[str, Any], style: str | None = None) -> None:
        table.add_row(
            name,
            str(block.get("n_scored", 0)),
            *(pct(block.get(f"recall@{k}")) for k in ks),
            pct(block.get(f"recall_all@{ks[-1]}")),
            pct(block.get("mrr")),
            pct(block.get(f"ndcg@{ks[-1]}")),
            style=style,
        )

    if "overall_comparable" in summary:
        table.caption = "overall_comparable: categories " + ", ".join(summary.get("comparable_categories", []))
        add("overall_comparable", summary["overall_comparable"], "bold")
    add("overall_all", summary["overall_all"], "bold")
    if "task_averaged" in summary:
        averaged = summary["task_averaged"]
        add("task_averaged", {**averaged, "n_scored": f"{averaged['n_categories']} cat."}, "bold")
    for cat, block in summary["per_category"].items():
        add(f"{cat} {block['label']}" if block["label"] != cat else cat, block)
    return table


def print_retrieval_summary(
    console: Console,
    summary: Mapping[str, Any],
    *,
    ks: list[int],
    title: str,
    load_counts: Mapping[str, int],
    out_dir: str,
) -> None:
    """Print the summary table(s), the counts a reader must see, and where outputs went."""
    console.print(retrieval_table(summary, ks, title))
    if "session" in summary:
        console.print(retrieval_table(summary["session"], ks, f"{title}, session gold"))
    latency = summary["search_latency_ms"]
    p50 = "-" if latency["p50"] is None else f"{latency['p50']:.2f}"
    p95 = "-" if latency["p95"] is None else f"{latency['p95']:.2f}"
    console.print(
        f"items {summary['n_items']} | errors (excluded) {summary['n_errors']} | "
        f"without retrieval gold (not scored) {summary['n_unscored']} | "
        + (f"abstention {summary['n_abstention']} | " if summary.get("n_abstention") else "")
        + f"search ms p50 {p50} p95 {p95}"
    )
    nonzero = {k: v for k, v in load_counts.items() if v}
    if nonzero:
        console.print("load: " + ", ".join(f"{k} {v}" for k, v in nonzero.items()))
    console.print(f"wrote {out_dir}")
