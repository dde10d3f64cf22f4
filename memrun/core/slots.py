"""Concurrency slots handed out first come, first served, with the free case in the caller's code."""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    """``n`` slots, handed out first come, first served: what ``asyncio.Semaphore`` does, with
    the free case in the caller's own code (``if slots.free: slots.free -= 1`` else
    ``await slots.wait()``). ``async with`` a Semaphore ran five Python-level calls
    (``__aenter__``, ``acquire``, ``locked`` and its generator, ``release``) for every use,
    though the slots of a run's calls rarely run out.

    A released slot goes straight to the first waiter, so ``free > 0`` means nobody waits.
    Used by :class:`memrun.llm.service.LLMService` (calls in flight); the answer stage's rows
    take turns on worker tasks instead (:mod:`memrun.accuracy.row_queue`).
    """

    def __init__(self, n: int) -> None:
        self.free = n
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def wait(self) -> None:
        """Wait until a slot is handed over (call when :attr:`free` is 0). A waiter cancelled
        after it was handed one passes it on."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter still waiting, else to :attr:`free`."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1
