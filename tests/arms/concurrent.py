"""User arms that allow concurrent calls (tests only), built on BM25, one index per history.

Named by ``arm._target_=arms.concurrent.<Class>`` with ``arm=bm25``, so they take bm25's
parameters. Each call waits ``DELAY_S`` (a server's latency) and counts the calls in flight;
``peak`` is the most seen at once since the class was last reset.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from memrun.arms.bm25 import BM25Arm
from memrun.records import Hit, Record

DELAY_S = 0.02


class _Counted:
    peak = 0
    in_flight = 0
    lock = threading.Lock()

    def __init__(self, **bm25: Any) -> None:
        self.bm25, self.indexes = bm25, {}

    @staticmethod
    def enter() -> None:
        with _Counted.lock:
            _Counted.in_flight += 1
            _Counted.peak = max(_Counted.peak, _Counted.in_flight)

    @staticmethod
    def leave() -> None:
        with _Counted.lock:
            _Counted.in_flight -= 1

    def _ingest(self, history_id: str, records: Sequence[Record]) -> None:
        arm = BM25Arm(**self.bm25)
        arm.ingest(history_id, records)
        self.indexes[history_id] = arm

    def close(self) -> None:
        self.indexes.clear()


class AsyncArm(_Counted):
    """An async arm: coroutines, awaited by memrun."""

    async def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        await asyncio.sleep(DELAY_S)
        self._ingest(history_id, records)

    async def search(self, query: str, k: int, history_id: str) -> list[Hit]:
        self.enter()
        try:
            await asyncio.sleep(DELAY_S)
            return self.indexes[history_id].search(query, k)
        finally:
            self.leave()

    async def release(self, history_id: str) -> None:
        del self.indexes[history_id]


class ThreadSafeArm(_Counted):
    """A synchronous arm that declares it may be called from several threads at once."""

    thread_safe = True

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        time.sleep(DELAY_S)
        with self.lock:
            self._ingest(history_id, records)

    def search(self, query: str, k: int, history_id: str) -> list[Hit]:
        self.enter()
        try:
            time.sleep(DELAY_S)
            with self.lock:  # bm25s itself is not documented as thread-safe
                return self.indexes[history_id].search(query, k)
        finally:
            self.leave()


class NoHistoryAsyncArm(AsyncArm):
    """An async arm whose search cannot tell the histories apart (a configuration error)."""

    async def search(self, query: str, k: int) -> list[Hit]:  # type: ignore[override]
        return []
