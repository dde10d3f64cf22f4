"""Request timeouts from one timer (memrun.llm.deadlines): a late request gets a timeout,
a cancellation from elsewhere stays a cancellation, and the timer runs only while requests do."""

from __future__ import annotations

import asyncio
import time

import pytest

from memrun.llm.deadlines import Deadlines


async def request(deadlines: Deadlines, seconds: float) -> str:
    """A request taking ``seconds``, timed as ChatClient.complete times its requests."""
    task = asyncio.current_task()
    cancelling = deadlines.start(task)
    try:
        try:
            await asyncio.sleep(seconds)
            return "answered"
        except asyncio.CancelledError:
            if deadlines.expired(task, cancelling):
                raise asyncio.TimeoutError from None
            raise
        finally:
            deadlines.stop(task)
    except asyncio.TimeoutError:
        return "timed out"


def test_only_the_late_requests_time_out_and_within_a_period_of_their_deadline():
    deadlines = Deadlines(0.16)  # checked every 0.02 s

    async def go() -> tuple[list[str], float]:
        t0 = time.monotonic()
        late = asyncio.create_task(request(deadlines, 30))
        results = await asyncio.gather(*(request(deadlines, s) for s in (0.0, 0.05, 0.1)))
        results.append(await late)
        return results, time.monotonic() - t0

    results, elapsed = asyncio.run(go())
    assert results == ["answered"] * 3 + ["timed out"]
    assert 0.16 <= elapsed < 1.0


def test_a_cancellation_from_elsewhere_stays_a_cancellation():
    async def go(also_late: bool) -> None:
        deadlines = Deadlines(100)
        task = asyncio.create_task(request(deadlines, 30))
        await asyncio.sleep(0.01)
        if also_late:  # the deadline's cancel is pending when the stop's comes
            deadlines._started[task] -= 1000
            deadlines._sweep()
            assert task in deadlines._expired
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadlines.close()

    asyncio.run(go(False))
    asyncio.run(go(True))


def test_the_timer_is_armed_only_while_requests_are_in_flight():
    deadlines = Deadlines(0.08)

    async def go() -> None:
        assert deadlines._timer is None
        assert await request(deadlines, 0.0) == "answered"
        assert deadlines._timer is not None  # armed by the request, gone at its next tick
        await asyncio.sleep(0.05)
        assert deadlines._timer is None and not deadlines._started and not deadlines._expired
        assert await request(deadlines, 1) == "timed out"
        deadlines.close()
        assert deadlines._timer is None

    asyncio.run(go())
