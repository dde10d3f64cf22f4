"""rich's live progress bar of a run on a terminal (:func:`memrun.pipeline.item_stages.make_progress`).

Loaded only when a bar is drawn: a run whose progress is off (``progress=false``) or goes to
a log (:mod:`memrun.pipeline.progress_lines`) reaches its first request without rich.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

from memrun.pipeline import progress_lines
from memrun.report.run_summary import stdout_console


class ActivityColumn(ProgressColumn):
    """What the run does besides finishing items (:data:`memrun.pipeline.progress_lines.ACTIVITY`):
    histories ingested and records/s, records embedded; read at each redraw."""

    def render(self, task: Task) -> Text:
        return Text(progress_lines.ACTIVITY.text(), style="progress.data.speed")


def rich_bar(console: Console | None, calls: bool) -> Progress:
    """The bar, drawn on ``console`` (None: :func:`memrun.report.run_summary.stdout_console`).
    The accuracy axis (``calls``) adds a calls line (calls, rate, cached, tokens) and, to fit
    80 columns, trades the elapsed time and half the bar for it."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(bar_width=10 if calls else 40),
        MofNCompleteColumn(),
        TextColumn("{task.fields[errors]} err"),
        *([TextColumn("{task.fields[calls]}")] if calls else [TimeElapsedColumn()]),
        ActivityColumn(),
        console=console or stdout_console(),
        transient=True,
    )
