"""A run's warnings: printing one and saving it are one call.

Every warning a run prints on stderr is also in its ``summary.json`` (``warnings``) and
its instrument (``warnings``), in the order printed. :meth:`RunWarnings.warn` is the only
way to say one: it redacts the line (:class:`memrun.core.redaction.Redactor`), prints it and
keeps it, so no path can print a warning without saving it or save one without printing.

Code far from the run (an arm erasing namespaces, a cache on a network disk, the run
folder's claim) calls the module function :func:`warn`, which goes to the run in
progress in this process (:meth:`RunWarnings.active`); outside a run (an arm used from
Python) the line is printed only, as there is no run to save it in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memrun.core.redaction import Redactor
from memrun.lazy import lazy

if TYPE_CHECKING:
    from rich import console as rich_console
    from rich import markup as rich_markup
else:
    rich_console = lazy("rich.console")  # loaded at the first warning: --help and --cfg never print one
    rich_markup = lazy("rich.markup")

_STDERR: list[Any] = []  # the rich Console, made at the first warning; it writes to sys.stderr as it is at each call


def print_warning(line: str) -> None:
    """One ``warning: <line>`` line on stderr (stdout carries the results)."""
    if not _STDERR:
        _STDERR.append(rich_console.Console(stderr=True))
    _STDERR[0].print(f"[yellow]warning:[/] {rich_markup.escape(line)}", soft_wrap=True, highlight=False)


class RunWarnings:
    """Every warning line of one run, in order: each printed once and kept (:attr:`lines`).

    printer: prints one line (default :func:`print_warning`). redactor: applied to each
    line before it is printed and kept (the run's secrets; see :mod:`memrun.core.redaction`).
    """

    def __init__(self, printer: Callable[[str], None] = print_warning, redactor: Redactor | None = None) -> None:
        self.lines: list[str] = []
        self.redactor = redactor or Redactor()
        self._printer = printer

    def warn(self, *lines: str | None) -> None:
        """Print and keep each of ``lines`` (None or empty: nothing to say), redacted."""
        for line in lines:
            if line:
                clean = self.redactor.text(line)
                self.lines.append(clean)
                self._printer(clean)

    @contextmanager
    def active(self) -> Iterator[RunWarnings]:
        """While the block runs, :func:`warn` goes to this run (nested runs: the innermost)."""
        _ACTIVE.append(self)
        try:
            yield self
        finally:
            _ACTIVE.remove(self)


_ACTIVE: list[RunWarnings] = []  # a plain list, not a context variable: arms warn from worker threads too


def current() -> RunWarnings | None:
    """The run in progress in this process, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def warn(*lines: str | None) -> None:
    """Say a warning in the run in progress (printed and saved); outside a run, printed only."""
    run = current()
    if run is not None:
        run.warn(*lines)
    else:
        for line in lines:
            if line:
                print_warning(line)
