"""The answer stage's row queue: concurrency workers take the rows in order, a row that never
waits is finished at once by the worker that took it, an error is raised once all rows ended,
and a stop leaves the queued rows."""

from __future__ import annotations

import asyncio

import pytest

from memrun.accuracy.row_queue import RowQueue


def test_at_most_concurrency_rows_are_in_progress_taken_in_order_each_in_a_worker_task():
    started: list[int] = []
    in_progress = peak = 0
    tasks: set[asyncio.Task[object] | None] = set()

    async def answer(row: int) -> None:
        nonlocal in_progress, peak
        started.append(row)
        tasks.add(asyncio.current_task())
        in_progress += 1
        peak = max(peak, in_progress)
        await asyncio.sleep(0.001 * (row % 3))
        in_progress -= 1

    async def go() -> asyncio.Task[object] | None:
        rows = RowQueue(4, answer, lambda: False)
        for row in range(20):
            rows.add(row)
        rows.start()
        await rows.finish()
        return asyncio.current_task()

    own = asyncio.run(go())
    assert started == list(range(20)) and peak == 4
    assert len(tasks) == 4 and own not in tasks  # never on the queuing task


def test_rows_that_never_wait_are_finished_in_one_turn_by_one_worker():
    done: list[int] = []

    async def answer(row: int) -> None:  # a row answered from the cache: no wait
        done.append(row)

    async def go() -> None:
        rows = RowQueue(8, answer, lambda: False)
        rows.start()
        await asyncio.sleep(0)  # the workers start, find nothing and wait
        for row in range(100):
            rows.add(row)
        rows.start()
        await asyncio.sleep(0)
        assert done == list(range(100)) and not rows.queued and rows.busy == 0
        await rows.finish()

    asyncio.run(go())


def test_an_error_is_raised_once_every_row_has_ended_and_a_stop_leaves_the_queue():
    done: list[int] = []
    stop = False

    async def answer(row: int) -> None:
        nonlocal stop
        await asyncio.sleep(0)
        if row == 3:
            raise ValueError("row 3")
        done.append(row)
        stop = stop or row == 12

    async def go(n: int) -> RowQueue[int]:
        rows = RowQueue(2, answer, lambda: stop)
        for row in range(n):
            rows.add(row)
        rows.start()
        try:
            await rows.finish()
        finally:
            rows.cancel()
        return rows

    with pytest.raises(ValueError, match="row 3"):
        asyncio.run(go(10))
    assert sorted(done) == [r for r in range(10) if r != 3]  # the other rows all answered
    done.clear()
    with pytest.raises(ValueError):
        asyncio.run(go(40))
    assert 12 in done and max(done) <= 13  # the rows in progress at the stop end; the rest are left
