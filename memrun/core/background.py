"""Start independent start-up work on a thread while the caller goes on."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

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
