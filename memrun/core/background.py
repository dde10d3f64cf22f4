"""Work off the caller's path: start-up work on a thread while the caller goes on
(:func:`in_background`), and a coroutine run to the end from plain code (:func:`run_blocking`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def in_background(fn: Callable[[], T]) -> Future[T]:
    """``fn()`` started on a thread of its own; ``.result()`` waits for it (and re-raises its error).

    For work that blocks outside the interpreter (subprocesses, file and TLS loading),
    so that it overlaps the caller's own start-up instead of adding to it.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memrun-background")
    try:
        return pool.submit(fn)
    finally:
        pool.shutdown(wait=False)


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to the end on an event loop of its own and return its result (its
    exception re-raised): in this thread, or, when this thread already runs a loop, in a
    short-lived worker thread. For an arm's set-up and clean-up (``arm=http``, ``arm=mcp``),
    never for the run's calls."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="memrun-setup") as pool:
        return pool.submit(asyncio.run, coro).result()
