"""Request timeouts from one timer: what ``aiohttp``'s total timeout did, without a timer a request.

``aiohttp.ClientTimeout(total=...)`` arms a timer for each request and enters a timer
context around every read of its reply: ~25k instructions of a call's ~390k (callgrind
of a plain aiohttp client at 128 calls in flight over a loopback server). :class:`Deadlines`
notes when each request started, and one timer, armed while requests are in flight, wakes
every ``min(1, timeout / 8)`` s and cancels the task of each request past ``timeout``;
the request sees :class:`asyncio.TimeoutError`, as before (aiohttp rounded a total timeout
above 5 s up to the next whole second; this fires at most ``timeout / 8`` late, 1 s at most).
A cancellation from elsewhere (Ctrl-C, a stop) stays a cancellation, as with :func:`asyncio.timeout`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any


class Deadlines:
    """Total timeouts of the requests in flight (``timeout``: seconds, > 0). Use::

        cancelling = deadlines.start(task)          # task: asyncio.current_task()
        try:
            try:
                ...                                 # the request
            except asyncio.CancelledError:
                if deadlines.expired(task, cancelling):
                    raise asyncio.TimeoutError from None
                raise
            finally:
                deadlines.stop(task)
        except asyncio.TimeoutError: ...

    One request at a time per task (a task awaits its request).
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.period = min(1.0, timeout / 8)
        self._started: dict[asyncio.Task[Any], float] = {}  # task -> when its request started (time.monotonic)
        self._expired: set[asyncio.Task[Any]] = set()  # cancelled here, the cancellation not yet seen by the task
        self._timer: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Task[Any] | None) -> int:
        """Note that ``task``'s request starts now (None: outside a task, no deadline);
        returns what :meth:`expired` needs (the task's pending cancellations)."""
        if task is None:
            return 0
        self._started[task] = time.monotonic()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.period, self._sweep)
        return task.cancelling()

    def stop(self, task: asyncio.Task[Any] | None) -> None:
        """``task``'s request ended (answered, failed or cancelled)."""
        if task is not None:
            self._started.pop(task, None)
            self._expired.discard(task)

    def expired(self, task: asyncio.Task[Any] | None, cancelling: int) -> bool:
        """True when the CancelledError ``task`` got is its deadline's alone (turn it into a
        timeout); False for a cancellation from elsewhere (re-raise it)."""
        if task is None or task not in self._expired:
            return False
        self._expired.discard(task)
        return task.uncancel() <= cancelling

    def _sweep(self) -> None:
        self._timer = None
        if not self._started:
            return  # re-armed by the next start()
        late = time.monotonic() - self.timeout
        for task, started in self._started.items():
            if started <= late and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.period, self._sweep)

    def close(self) -> None:
        """Disarm the timer (the client is closing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
