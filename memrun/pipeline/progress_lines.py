"""Progress as plain lines, for a stderr that is not a terminal (CI logs, ``nohup``).

A live bar drawn into a log file is either nothing or noise; instead, every
``MEMRUN_PROGRESS_SECONDS`` seconds (default 30) one line goes to stderr:
``progress: locomo x bm25: 500/1986 items (25%), 2 errors, 1200 calls 40/s ..., 12.3 items/s, 41 s``.
:class:`PlainProgress` takes the calls :mod:`memrun.pipeline.run` makes on a rich ``Progress``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from rich import progress as rich_progress

DEFAULT_SECONDS = 30.0


class Activity:
    """What a run is doing besides finishing items, for its progress line: histories ingested,
    records embedded. Thread-safe (the arm may work on a worker thread); one per process
    (:data:`ACTIVITY`), read by the progress bar and :class:`PlainProgress` at each redraw.

    ``start(phase, total, unit)`` opens a phase, ``advance(phase, n, records=...)`` counts,
    ``end(phase)`` drops it; :meth:`text` is e.g. ``embedding 1200/5882 records 41/s``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phases: dict[str, list[Any]] = {}  # phase -> [done, total, unit, t0, records]

    def start(self, phase: str, total: int | None, unit: str) -> None:
        with self._lock:
            self._phases[phase] = [0, total, unit, time.perf_counter(), 0]

    def advance(self, phase: str, n: int = 1, records: int = 0) -> None:
        with self._lock:
            entry = self._phases.get(phase)
            if entry is not None:
                entry[0] += n
                entry[4] += records

    def end(self, phase: str) -> None:
        with self._lock:
            self._phases.pop(phase, None)

    def clear(self) -> None:
        with self._lock:
            self._phases.clear()

    def text(self) -> str:
        """The open phases in one short clause each, ``; ``-joined ("" when none)."""
        now, parts = time.perf_counter(), []
        with self._lock:
            for phase, (done, total, unit, t0, records) in self._phases.items():
                count = f"{done}/{total}" if total else str(done)
                rate_of, rate_unit = (records, "records") if records else (done, unit)
                rate = rate_of / max(now - t0, 1e-9)
                parts.append(f"{phase} {count} {unit} {rate:.0f} {rate_unit}/s" if now - t0 >= 1
                             else f"{phase} {count} {unit}")
        return "; ".join(parts)


ACTIVITY = Activity()


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
    run still says where it is; ``quiet``: prints nothing and starts no thread (``progress=false``)."""

    def __init__(self, seconds: float | None = None, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.quiet = quiet
        self.seconds = interval_seconds() if seconds is None else seconds
        self.stream = stream or sys.stderr
        self.description, self.completed = "", 0
        self.total: int | None = None
        self.fields: dict[str, Any] = {}
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add_task(self, description: str, total: int | None = None, **fields: Any) -> rich_progress.TaskID:
        """Start counting; returns the task id (always 0: memrun runs one task)."""
        self.description, self.total, self.fields = description, total, dict(fields)
        self._t0 = time.perf_counter()
        return cast("rich_progress.TaskID", 0)  # rich's TaskID is an int: no need to load rich for it

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
        if activity := ACTIVITY.text():
            parts.append(activity)
        parts += [f"{self.completed / max(elapsed, 1e-9):.1f} items/s", f"{elapsed:.0f} s"]
        return ", ".join(parts)

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def __enter__(self) -> PlainProgress:
        if self.quiet:
            return self
        self._thread = threading.Thread(target=self._loop, name="memrun-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
