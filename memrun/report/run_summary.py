"""Render a run's summary (from :func:`memrun.metrics.by_category.summarize_by_granularity`) as tables."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.metrics import conventions
    from memrun.metrics import retrieval as metrics_retrieval
    from memrun.report import model as report_model
else:
    report_model = lazy("memrun.report.model")
    metrics_retrieval = lazy("memrun.metrics.retrieval")
    conventions = lazy("memrun.metrics.conventions")


def stdout_console() -> Console:
    """The console a run prints its table to: stdout, 120 columns when it is not a terminal (CI
    logs, files: a table wide enough to read), a terminal's own width otherwise."""
    return Console(width=None if sys.stdout.isatty() else 120)


def pct(value: Any) -> str:
    """A fraction as percent with one decimal; ``-`` for None."""
    return "-" if value is None else f"{100 * float(value):.1f}"


def percent(value: Any) -> str:
    """:func:`pct` with its sign (``12.5%``), or ``-`` for None (not ``-%``)."""
    return "-" if value is None else f"{pct(value)}%"


def retrieval_table(summary: Mapping[str, Any], ks: list[int], title: str) -> Table:
    """A rich Table: one row per slice (:func:`memrun.report.model.slices`), metrics in percent.

    Headers take two lines (``recall`` over ``@5``; with more than four cut-offs ``R``
    over ``@5``, named in the caption) and long slice names fold, so that the table fits
    80 columns.
    """
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("slice", overflow="fold", min_width=12)
    table.add_column("n", justify="right", no_wrap=True)
    short = len(ks) > 4
    recall, recall_all = ("R", "Rall") if short else ("recall", "recall")
    for k in ks:
        table.add_column(f"{recall}\n@{k}", justify="right", no_wrap=True)
    table.add_column(f"{recall_all}\n{'@' if short else 'all@'}{ks[-1]}", justify="right", no_wrap=True)
    table.add_column("MRR", justify="right", no_wrap=True)
    table.add_column(f"nDCG\n@{ks[-1]}", justify="right", no_wrap=True)
    captions = ["R@K: recall@K; Rall: recall_all"] if short else []
    for s in report_model.slices(summary):
        block = s.block
        table.add_row(
            s.name,
            str(block.get("n_scored", 0)),
            *(pct(block.get(f"recall@{k}")) for k in ks),
            pct(block.get(f"recall_all@{ks[-1]}")),
            pct(block.get("mrr")),
            pct(block.get(f"ndcg@{ks[-1]}")),
            style="bold" if s.bold else None,
        )
    if "overall_comparable" in summary:
        captions.append("overall_comparable: categories " + ", ".join(summary.get("comparable_categories", [])))
    table.caption = "; ".join(captions) or None
    return table


def named_variant_lines(summary: Mapping[str, Any], ks: list[int]) -> list[str]:
    """One line per named variant and granularity the run reported (``evidence_share``,
    ``lme_ndcg``; see docs/reproducing.md), over all items, in percent per K, e.g.
    ``evidence_share, overall_all: @1 24.1 @5 45.4``."""
    blocks = (("", summary.get("overall_all") or {}),
              ("session_", (summary.get("session") or {}).get("overall_all") or {}))
    caveats = summary.get("caveats") or {}
    lines = []
    for prefix, block in blocks:
        for name in metrics_retrieval.NAMED_VARIANTS:
            values = [f"@{k} {pct(block[f'{name}@{k}'])}" for k in ks if f"{name}@{k}" in block]
            if values:
                note = conventions.credited_note(caveats, f"{prefix}{name}")
                lines.append(f"{prefix}{name}, overall_all: " + " ".join(values) + note)
    return lines


def caveat_lines(summary: Mapping[str, Any]) -> list[str]:
    """The counts printed under a run's table: empty searches always; items credited by a
    convention and unreachable gold in one short line when there are any
    (:mod:`memrun.metrics.conventions`; a summary written before they were counted: none)."""
    caveats = summary.get("caveats")
    if not caveats:
        return []
    line = conventions.caveat_line(caveats)
    return [conventions.searches_text(caveats), *([line] if line else [])]


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
    for line in named_variant_lines(summary, ks):
        console.print(line)
    latency = summary["search_latency_ms"]
    p50 = "-" if latency["p50"] is None else f"{latency['p50']:.2f}"
    p95 = "-" if latency["p95"] is None else f"{latency['p95']:.2f}"
    console.print(
        f"items {summary['n_items']} | errors (excluded) {summary['n_errors']} | "
        f"without retrieval gold (not scored) {summary['n_unscored']} | "
        + (f"abstention {summary['n_abstention']} | " if summary.get("n_abstention") else "")
        + f"search ms p50 {p50} p95 {p95}"
    )
    for line in caveat_lines(summary):
        console.print(line)
    nonzero = {k: v for k, v in load_counts.items() if v}
    if nonzero:
        console.print("load: " + ", ".join(f"{k} {v}" for k, v in nonzero.items()))
    console.print(f"wrote {escape(str(out_dir))}")
