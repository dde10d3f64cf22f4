"""The answer stage's item x repeats, queued for a concurrency slot and started as slots free.

A queued row is no task yet: a row is started when a slot is free (a row that ends starts
the next one in the queue), in a task of its own, or, when every call it makes was read
from the cache ahead (a re-run), on the caller's task, where it finishes without a task
(:func:`memrun.core.background.start_eagerly`). A row that makes a call always runs in its
own task from its start: a request's timeout is kept per task (:mod:`memrun.llm.deadlines`),
and requests sent on the stage's task shared one deadline (the first to end cleared it for
all; a late one cancelled the stage itself). Against a task per row made at once, each
waiting on a slot, a queued row makes no future to wait on and takes no turn of the loop to
wake (6,000 rows in the bench's cold run, 5,800 of which waited).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from memrun.core.background import start_eagerly

T = TypeVar("T")


class RowQueue(Generic[T]):
    """Rows (``T``: what ``run`` takes) started at most ``concurrency`` at a time, in the order
    queued. ``run(row)``: the coroutine that answers one row. ``stopping()``: True once no row
    may start any more (the queued ones are then left)."""

    def __init__(self, concurrency: int, run: Callable[[T], Coroutine[Any, Any, None]],
                 stopping: Callable[[], bool]) -> None:
        self.concurrency = concurrency
        self.queued: deque[tuple[T, bool]] = deque()  # (row, runs eagerly), waiting for a slot
        self.room = asyncio.Event()  # set when fewer than concurrency rows are queued
        self._free = concurrency  # slots no row holds
        self._run, self._stopping = run, stopping
        self._tasks: set[asyncio.Task[None]] = set()  # rows' tasks not yet finished, or failed
        self._starting = False  # start() is running (a row it ran eagerly ends by calling it again)

    def add(self, row: T, eager: bool) -> None:
        """Queue ``row``; ``eager``: every call it makes was read ahead (it runs on the caller's
        task when started, and most often finishes there). Started by :meth:`start`."""
        self.queued.append((row, eager))

    def start(self) -> bool:
        """Start queued rows while slots are free and :attr:`stopping` is False; True when a
        task was made for one (a row run eagerly that finished makes none)."""
        if self._starting:
            return False  # a row run eagerly by the start() below ended: that loop goes on
        made = False
        queued, tasks = self.queued, self._tasks
        self._starting = True
        try:
            while self._free and queued and not self._stopping():
                row, eager = queued.popleft()
                self._free -= 1
                run = self._one(row)
                task = start_eagerly(run) if eager else asyncio.get_running_loop().create_task(run)
                if task is not None:
                    made = True
                    tasks.add(task)
                    task.add_done_callback(self._finished)
        finally:
            self._starting = False
        if len(queued) < self.concurrency:
            self.room.set()
        return made

    async def finish(self) -> None:
        """Wait until every started row has ended (a row that ends starts the next queued one:
        more tasks may come meanwhile); re-raise the first error a row's task ended in."""
        while self._tasks:
            await asyncio.gather(*self._tasks)

    def cancel(self) -> None:
        """Drop the queued rows and cancel the started ones (none starts another)."""
        self.queued.clear()
        for task in list(self._tasks):
            task.cancel()

    async def _one(self, row: T) -> None:
        try:
            await self._run(row)
        finally:
            self._free += 1
            if self.queued:
                self.start()

    def _finished(self, task: asyncio.Task[None]) -> None:
        """A row's task is dropped when it ends, unless in an error (raised by :meth:`finish`):
        the collector does not walk thousands of finished tasks, and the gather at the end waits
        on a few (a 12,000-call cold run gathered 6,000 there, and the allocation started a 0.1 s
        collection of them all)."""
        if task.cancelled() or task.exception() is None:
            self._tasks.discard(task)
