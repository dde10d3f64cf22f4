"""A stop asked for from another thread (memrun.core.signals.request: a sweep's job watching
for its stop file) while the run's event loop ends."""

from __future__ import annotations

import asyncio
import threading

from memrun.core import signals


def test_a_request_from_another_thread_that_reaches_a_closed_loop_is_recorded_without_an_error():
    """request() takes its list of callbacks, then calls them one by one: the block that
    registered a loop's callback may end, and its loop close, in between. The request
    thread is held inside an earlier callback while that happens (deterministically)."""
    loop = asyncio.new_event_loop()
    holding, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def held() -> None:  # registered first, so called first: request() has its list now
        holding.set()
        release.wait(10)

    def ask() -> None:
        try:
            signals.request()
        except BaseException as exc:  # noqa: BLE001 - what the thread would print as a traceback
            errors.append(exc)

    thread = threading.Thread(target=ask)
    with signals.on_request(held):
        with signals.on_request_call_soon(loop, lambda: None):
            thread.start()
            assert holding.wait(10)
        loop.close()  # the run's loop ends while the request is between its callbacks
        release.set()
        thread.join(10)
    assert not thread.is_alive()
    assert errors == [] and signals.requested()


def test_a_request_reaches_a_running_loop_as_a_call_on_it():
    loop = asyncio.new_event_loop()
    called: list[str] = []

    async def main() -> None:
        with signals.on_request_call_soon(loop, called.append, "stop"):
            threading.Thread(target=signals.request).start()
            while not called:
                await asyncio.sleep(0.01)

    try:
        loop.run_until_complete(asyncio.wait_for(main(), 10))
    finally:
        loop.close()
    assert called == ["stop"] and signals.requested()
