"""Render a sweep's jobs (:class:`memrun.report.model.SweepRow`) as a terminal table, markdown,
JSON or CSV. All formats carry the same fields."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memrun.lazy import lazy
from memrun.report.model import SweepRow
from memrun.report.run_summary import pct

if TYPE_CHECKING:
    from memrun.report import md as report_md
else:
    report_md = lazy("memrun.report.md")

HEADERS = ["job", "overrides", "status", "exit", "headline", "value %", "items", "errors", "seconds"]


def items_cell(r: SweepRow) -> str:
    """The items the headline value is over, and the run's items when they are more:
    ``1536 of 1986`` (LoCoMo's categories 1-4 of its questions), ``1986``, or ``-``."""
    if r.headline_items is None or r.n_items is None or r.headline_items == r.n_items:
        n = r.headline_items if r.headline_items is not None else r.n_items
        return "-" if n is None else str(n)
    return f"{r.headline_items} of {r.n_items}"


def _cells(r: SweepRow) -> list[str]:
    return [str(r.job), r.overrides, r.status, str(r.exit_code), r.headline or "-", pct(r.value),
            items_cell(r), "-" if r.n_errors is None else str(r.n_errors),
            "-" if r.seconds is None else f"{r.seconds:.1f}"]


def _slices_note(rows: Sequence[SweepRow]) -> str | None:
    """One line naming the slice each headline value is over, when a value is over fewer
    items than its run has."""
    slices = sorted({r.headline_slice for r in rows if r.headline_slice and items_cell(r).count(" of ")})
    if not slices:
        return None
    return (f"value % is over {', '.join(slices)}: 'items' says how many of the run's items that is "
            "(summary.json holds overall_all too)")


def print_sweep_table(console: Console, rows: Sequence[SweepRow], title: str) -> None:
    """One row per job, then the first error of each job that did not complete."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for h in HEADERS:
        left = h in ("overrides", "status", "headline")
        table.add_column(h, justify="left" if left else "right", overflow="fold", no_wrap=h != "overrides",
                         ratio=1 if h == "overrides" else None)
    for r in rows:
        # Text, not markup: an override or an error may hold [name] ('memrun[local]', arm.args=[x])
        table.add_row(*map(Text, _cells(r)), style=None if r.status == "complete" else "red")
    console.print(table)
    if note := _slices_note(rows):
        console.print(note, soft_wrap=True, highlight=False, markup=False)
    for r in rows:
        if r.error and r.status != "complete":
            console.print(f"job {r.job} ({r.status}): {r.error}", soft_wrap=True, highlight=False, markup=False)


def render(rows: Sequence[SweepRow], fmt: str, title: str = "sweep") -> str:
    """The table as ``text``, ``markdown``, ``json`` (every field) or ``csv`` (every field)."""
    if fmt == "json":
        return json.dumps([r.to_dict() for r in rows], indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        fields = list(rows[0].to_dict()) if rows else list(SweepRow.__dataclass_fields__)
        writer = csv.DictWriter(buf, fieldnames=fields)
        writer.writeheader()
        writer.writerows(r.to_dict() for r in rows)
        return buf.getvalue()
    if fmt == "markdown":
        note = _slices_note(rows)
        return "\n".join(report_md.table(HEADERS, [_cells(r) for r in rows])) + "\n" + (
            f"\n{report_md.inline(note)}\n" if note else "")
    buf = io.StringIO()
    print_sweep_table(Console(file=buf, width=120, color_system=None), rows, title)
    return buf.getvalue()
