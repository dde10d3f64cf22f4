"""Progress as plain lines, for a stderr that is not a terminal (CI logs, ``nohup``).

A live bar drawn into a log file is either nothing or noise; instead, every
``MEMRUN_PROGRESS_SECONDS`` seconds (default 30) one line goes to stderr:
``progress: locomo x bm25: 500/1986 items (25%), 2 errors, 1200 calls 40/s ..., 12.3 items/s, 41 s``.
:class:`PlainProgress` takes the calls :mod:`memrun.run` makes on a rich ``Progress``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

DEFAULT_SECONDS = 30.0


def interval_seconds() -> float:
    """Seconds between lines: ``$MEMRUN_PROGRESS_SECONDS`` when a positive number, else 30."""
    try:
        value = float(os.environ.get("MEMRUN_PROGRESS_SECONDS", DEFAULT_SECONDS))
    except ValueError:
        return DEFAULT_SECONDS
    return value if value > 0 else DEFAULT_SECONDS


class PlainProgress:
    """A stand-in for ``rich.progress.Progress`` (``add_task``, ``update``, a context
    manager) that prints a line every ``seconds`` from a background thread, so a stalled
    run still says where it is."""

    def __init__(self, seconds: float | None = None, stream: TextIO | None = None) -> None:
        self.seconds = interval_seconds() if seconds is None else seconds
        self.stream = stream or sys.stderr
        self.description, self.total, self.completed = "", None, 0
        self.fields: dict[str, Any] = {}
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add_task(self, description: str, total: int | None = None, **fields: Any) -> int:
        """Start counting; returns the task id (always 0: memrun runs one task)."""
        self.description, self.total, self.fields = description, total, dict(fields)
        self._t0 = time.perf_counter()
        return 0

    def update(self, task: int, *, advance: int | None = None, completed: int | None = None, **fields: Any) -> None:
        """Record progress (as ``Progress.update``); nothing is printed here."""
        if completed is not None:
            self.completed = completed
        if advance:
            self.completed += advance
        self.fields.update(fields)

    def line(self) -> str:
        """The progress line as it would be printed now."""
        elapsed = time.perf_counter() - self._t0
        done = f"{self.completed}/{self.total}" if self.total else str(self.completed)
        share = f" ({100 * self.completed / self.total:.0f}%)" if self.total else ""
        parts = [f"progress: {self.description}: {done} items{share}", f"{self.fields.get('errors', 0)} errors"]
        if self.fields.get("calls"):
            parts.append(str(self.fields["calls"]))
        parts += [f"{self.completed / max(elapsed, 1e-9):.1f} items/s", f"{elapsed:.0f} s"]
        return ", ".join(parts)

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def __enter__(self) -> PlainProgress:
        self._thread = threading.Thread(target=self._loop, name="memrun-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
