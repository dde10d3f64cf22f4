"""The answer stage's item x repeats, queued and answered by ``concurrency`` worker tasks.

Each worker takes the next queued row, answers it, and takes the next: at most
``concurrency`` rows are in progress, in the order queued, and a row is no task of its
own. Against a task per row (6,000 in the bench's cold run), no task is made, scheduled,
called back and dropped per row, and no queued row waits on a future of its own for a
slot. A row answered from the cache never waits, so the worker that takes it finishes it
at once and goes on to the next (a cached re-run's rows in one turn of the loop).

Each row runs in a worker's task, never on the task that queues it: a request's timeout is
kept per task (:mod:`memrun.llm.deadlines`, one request at a time per task), and requests
sent on the queuing task shared one deadline (the first to end cleared it for all; a late one
cancelled the queuing task itself).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class RowQueue(Generic[T]):
    """Rows (``T``: what ``run`` takes) answered at most ``concurrency`` at a time, in the order
    queued. ``run(row)``: the coroutine that answers one row. ``stopping()``: True once no row
    may start any more (the queued ones are then left). Use on one event loop::

        rows.add(row) ...; rows.start()     # as rows come
        await rows.finish()                 # no more rows: wait for the workers
        rows.cancel()                       # in a finally: drop what is left
    """

    def __init__(self, concurrency: int, run: Callable[[T], Coroutine[Any, Any, None]],
                 stopping: Callable[[], bool]) -> None:
        self.concurrency = concurrency
        self.queued: deque[T] = deque()  # rows no worker has taken yet, in order
        self.room = asyncio.Event()  # set when fewer than concurrency rows are queued
        self.busy = 0  # rows in progress (taken, not yet answered)
        self._run, self._stopping = run, stopping
        self._workers: list[asyncio.Task[None]] = []
        self._idle: deque[asyncio.Future[None]] = deque()  # workers waiting for rows
        self._waking = False  # a worker was woken and has not run yet
        self._closed = False  # no row will be added: an idle worker ends
        self._error: Exception | None = None  # the first error a row raised (finish raises it)

    def add(self, row: T) -> None:
        """Queue ``row`` (answered once :meth:`start` was called)."""
        self.queued.append(row)

    def start(self) -> None:
        """Have the workers take the queued rows: made at the first call, an idle one woken."""
        if not self._workers:
            loop = asyncio.get_running_loop()
            self._workers = [loop.create_task(self._work()) for _ in range(self.concurrency)]
        elif self.queued:
            self._wake()

    async def finish(self) -> None:
        """No more rows: wait until the workers have answered the queued ones (none, once
        :attr:`stopping`) and ended; then raise the first error a row raised, if any (its
        worker went on with the next rows, as the others did)."""
        self._closed = True
        while self._idle:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)
        await asyncio.gather(*self._workers)
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """Drop the queued rows and cancel the workers (the rows they are answering)."""
        self.queued.clear()
        for worker in self._workers:
            worker.cancel()

    def _wake(self) -> None:
        """Wake one idle worker, unless one woken has not run yet (it takes the next row, and
        wakes another if more are left when it does: a row answered from the cache is done
        before the next is taken, and its worker takes them all)."""
        if self._waking:
            return
        while self._idle:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._waking = True
                return

    async def _work(self) -> None:
        queued, room, concurrency = self.queued, self.room, self.concurrency
        loop = asyncio.get_running_loop()
        while True:
            while queued and not self._stopping():
                row = queued.popleft()
                if queued:
                    self._wake()
                if len(queued) < concurrency and not room.is_set():
                    room.set()
                self.busy += 1
                try:
                    await self._run(row)
                except Exception as exc:  # noqa: BLE001 - raised by finish(), once every row has ended
                    if self._error is None:
                        self._error = exc
                finally:
                    self.busy -= 1
            if self._closed or self._stopping():
                return
            waiter = loop.create_future()
            self._idle.append(waiter)
            await waiter
            self._waking = False
