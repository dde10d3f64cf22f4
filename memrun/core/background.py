"""Work off the caller's path: start-up work on a thread while the caller goes on
(:func:`in_background`), and a coroutine run to the end from plain code (:func:`run_blocking`);
and a coroutine run on it, up to its first wait, before a task is made for the rest
(:func:`start_eagerly`)."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable, Coroutine, Generator
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


def start_eagerly(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run ``coro`` on the running loop's thread now, up to its first wait; None when it
    finished without one, else a task that goes on from there (as ``asyncio.create_task``'s
    would have). What Python 3.12's ``eager_task_factory`` does for one coroutine.

    A call answered from the cache never waits: the answer stage's row of a cached item x
    repeat (reader and judge) then finishes here, without a task, its scheduling and its
    turn of the loop (~10 us each, 6,000 in a cached re-run of 2,000 LoCoMo questions x 3).
    An exception raised before the first wait is raised here. Up to that wait ``coro`` runs
    on the caller's task (``asyncio.current_task()`` is the caller's): start eagerly only
    what sends no request before its first wait, since a request's timeout is kept per task
    (:mod:`memrun.llm.deadlines`; :mod:`memrun.accuracy.row_queue` starts a row that makes
    a call in a task of its own).
    """
    try:
        first = coro.send(None)
    except StopIteration:
        return None
    # what asyncio.ensure_future does with a coroutine, without its checks (~1 us a task)
    return asyncio.get_running_loop().create_task(_resumed(coro, first))


async def _resumed(coro: Coroutine[Any, Any, None], first: Any) -> None:
    await _go_on(coro, first)


@types.coroutine
def _go_on(coro: Coroutine[Any, Any, None], first: Any) -> Generator[Any, Any, None]:
    """Hand the task what ``coro`` waits on (``first``, then each later one) and hand
    ``coro`` what the task sends or throws back: ``yield from`` for a coroutine already started."""
    value = first
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - a cancellation or the awaited future's error goes to coro
            try:
                value = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                value = coro.send(sent)
            except StopIteration:
                return
