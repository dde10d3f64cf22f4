"""A running run's progress, in a small file beside its rows, for ``memrun view`` to read.

While a run writes its items it keeps :data:`LIVE_FILE` in the run folder up to date (at
most every :data:`EVERY_S` seconds, replaced atomically): who writes it (``pid``, ``host``),
what runs (``run_id``, ``benchmark``, ``arm``, ``axis``), ``done`` and ``total`` rows (items
x repeats), ``errors``, ``in_flight`` (LLM calls sent and not yet answered on the accuracy
axis; arm calls on the recall axis, None for a sequential arm), ``started`` and ``updated``
(Unix seconds). The run removes it when its table is finished, whatever the outcome. A file left behind (kill -9) names a process that no
longer runs: :func:`read_live` then reports the run as not running.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LIVE_FILE = ".memrun-live.json"
EVERY_S = 0.5


def process_alive(pid: Any) -> bool:
    """Whether a process with this pid runs on this machine (True when it cannot be told)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, TypeError, ValueError, OverflowError):
        return True
    return True


class LiveStatus:
    """Writes :data:`LIVE_FILE` for one run (module docstring). ``in_flight``: a callable
    giving the calls in flight now, or None."""

    def __init__(self, folder: Path, fields: dict[str, Any], total: int | None,
                 in_flight: Callable[[], int | None] | None = None) -> None:
        self.path = Path(folder) / LIVE_FILE
        self._in_flight = in_flight
        self._state: dict[str, Any] = {**fields, "pid": os.getpid(), "host": socket.gethostname(), "done": 0,
                                       "total": total, "errors": 0, "in_flight": None, "started": time.time()}
        self._written = 0.0
        self.write()

    def row(self, error: bool) -> None:
        """Count one finished row; rewrite the file when :data:`EVERY_S` has passed."""
        self._state["done"] += 1
        self._state["errors"] += bool(error)
        if time.monotonic() - self._written >= EVERY_S:
            self.write()

    def write(self) -> None:
        """Write the file now (a failed write is ignored: it only informs a viewer)."""
        self._written = time.monotonic()
        self._state["in_flight"] = self._in_flight() if self._in_flight is not None else None
        self._state["updated"] = time.time()
        tmp = self.path.with_name(f"{LIVE_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(self._state), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass

    def close(self) -> None:
        """Remove the file (the run's table is finished)."""
        self.path.unlink(missing_ok=True)


def read_live(folder: Path) -> dict[str, Any] | None:
    """The live file of ``folder`` with ``running`` (its writer still runs: same host and a
    live pid, or another host's file updated in the last minute) and ``elapsed_s``; None when
    there is no readable file."""
    try:
        state = json.loads((Path(folder) / LIVE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    now = time.time()
    if state.get("host") == socket.gethostname():
        running = process_alive(state.get("pid"))
    else:
        running = now - float(state.get("updated") or 0) < 60
    state["running"] = running
    state["elapsed_s"] = max(0.0, (now if running else float(state.get("updated") or now)) -
                             float(state.get("started") or now))
    return state


def progress_text(state: dict[str, Any]) -> str:
    """``120 of 1986 rows, 12 s, 3 calls in flight`` for a live state from :func:`read_live`."""
    total = state.get("total")
    done = f"{state.get('done', 0)} of {total} rows" if total else f"{state.get('done', 0)} rows"
    errors = f", {state['errors']} errors" if state.get("errors") else ""
    flight = f", {state['in_flight']} calls in flight" if state.get("in_flight") is not None else ""
    return f"{done}{errors}, {state.get('elapsed_s', 0):.0f} s{flight}"
