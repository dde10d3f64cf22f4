"""start_eagerly: a coroutine run up to its first wait, a task made only for the rest."""

from __future__ import annotations

import asyncio

import pytest

from memrun.core.background import start_eagerly


def test_a_coroutine_that_never_waits_finishes_without_a_task():
    done: list[int] = []

    async def quick() -> None:
        done.append(1)

    async def main() -> None:
        before = len(asyncio.all_tasks())
        assert start_eagerly(quick()) is None
        assert done == [1] and len(asyncio.all_tasks()) == before  # ran at once, no task made

    asyncio.run(main())


def test_a_coroutine_that_waits_goes_on_in_a_task_with_results_errors_and_cancellation():
    log: list[object] = []

    async def waits(value: int) -> None:
        log.append(("before", value))
        got = await asyncio.sleep(0.01, result=value)  # the value the awaited future gives reaches the coroutine
        log.append(("after", got))

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("boom")

    async def cancelled() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append("cancelled inside")
            raise

    async def main() -> None:
        task = start_eagerly(waits(7))
        assert task is not None and log == [("before", 7)]  # the part before the wait ran here
        await task
        assert log[-1] == ("after", 7)
        failing = start_eagerly(fails())
        assert failing is not None
        with pytest.raises(ValueError, match="boom"):
            await failing
        sleeper = start_eagerly(cancelled())
        assert sleeper is not None
        await asyncio.sleep(0)
        sleeper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeper
        assert log[-1] == "cancelled inside"

    asyncio.run(main())


def test_an_error_before_the_first_wait_is_raised_by_the_call():
    async def broken() -> None:
        raise KeyError("at once")

    async def main() -> None:
        with pytest.raises(KeyError):
            start_eagerly(broken())

    asyncio.run(main())
