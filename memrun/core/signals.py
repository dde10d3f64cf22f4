"""Ctrl-C and SIGTERM stop a run at a safe point, never inside an arbitrary frame.

Raising KeyboardInterrupt from a signal handler lands wherever the interpreter happens
to be: inside a connection's ``__del__`` it is printed as "Exception ignored" and lost,
and the run goes on to exit 0 as ``complete`` (seen in 1 of 12 SIGTERMs during an
accuracy run). So the handler installed here only *records* the request and wakes the
code that can stop cleanly:

- the accuracy axis registers (:func:`on_request`) a callback that cancels its event
  loop's main task (``loop.call_soon_threadsafe``, safe from a handler);
- the retrieval loop calls :func:`check` between items, which raises KeyboardInterrupt
  there, in plain code;
- writing the table (merging the parts) is never interrupted (:func:`shielded`), not even
  by a second signal: it finishes, then the run ends with status ``interrupted`` and
  exit 130.

A second signal raises KeyboardInterrupt at once, for a call that hangs.

A sweep's jobs may run in other processes (joblib, submitit, Ray workers), which a signal
to the launching process never reaches. There the stop arrives as a file: the launching
process creates it when asked to stop, and each job watches for it (:func:`watch`) and
then asks for the stop (:func:`request`) exactly as a signal would (:mod:`memrun.jobs.sweep`).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy

if TYPE_CHECKING:
    import asyncio
    import logging
else:
    logging = lazy("logging")  # only a stopped run's exit flushes it (memrun.lazy)

SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s)
"""Ctrl-C, ``kill`` (and CI time-outs), and a closed terminal."""

_requested: list[int] = []  # the signals received since install(), in order
_callbacks: list[Callable[[], object]] = []
_shielded: list[bool] = []  # non-empty while a shielded() block runs
_exit_hook: list[bool] = []  # non-empty once exit_quickly_when_stopped() registered its hook


def handler(signum: int, frame: Any) -> None:
    """The signal handler: record the request, wake the registered callbacks; on a second
    signal raise KeyboardInterrupt at once."""
    _requested.append(signum)
    if len(_requested) > 1 and not _shielded:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}, again: stopping now")
    os.write(2, b"\nmemrun: stopping after the work in progress (press Ctrl-C again to stop at once)\n")
    for callback in list(_callbacks):
        callback()


def request(signum: int = signal.SIGTERM) -> None:
    """Ask for a stop from code, as the first signal does (a no-op once one was asked for).
    Safe from any thread: the callbacks only schedule work (``call_soon_threadsafe``)."""
    if _requested:
        return
    _requested.append(signum)
    for callback in list(_callbacks):
        callback()


def installed() -> bool:
    """Whether this process handles SIGTERM with :func:`handler` (the command line installed it)."""
    return signal.getsignal(signal.SIGTERM) is handler


@contextmanager
def watch(path: Path, interval: float = 0.2) -> Iterator[None]:
    """Inside the block, :func:`request` a stop as soon as ``path`` exists (checked every
    ``interval`` seconds by a daemon thread, and at once on entry)."""
    done = threading.Event()

    def poll() -> None:
        while not done.wait(interval):
            if path.exists():
                request()
                return

    if path.exists():
        request()
    thread = threading.Thread(target=poll, name="memrun-stop-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def exit_quickly_when_stopped() -> None:
    """In a launcher's worker process: if a stop was asked for, the process ends at its exit
    without the interpreter's teardown, which frees every object of ~600 modules one by
    one (0.45 s of CPU; 2-4.5 s on a loaded 2-core machine, all of a stopped submitit job's
    time after its rows were merged and its result saved). Logging and the standard streams
    are flushed first; the exit code is 1 after an uncaught exception, else 0 (a
    ``sys.exit(n)`` code is lost on this path). Registered once per process, before the
    first job, so the exit handlers that jobs register (an arm's ``close``) run before it.
    A process never stopped exits as usual."""
    if _exit_hook:
        return
    _exit_hook.append(True)

    def exit_now() -> None:
        if not _requested:
            return
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed, or a broken pipe: nothing left to save
                pass
        failed = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        os._exit(1 if failed is not None else 0)

    atexit.register(exit_now)


def install() -> Callable[[], None]:
    """Handle SIGINT and SIGTERM as described above; returns a function restoring the
    previous handlers. A no-op outside the main thread (signals only reach it)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _requested.clear()
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


@contextmanager
def kept() -> Iterator[None]:
    """Put memrun's handlers back, on leaving the block, wherever they were installed when it
    began: for a library call that installs its own. ``ray.init`` replaces SIGTERM's twice,
    with one that exits and under it abseil's failure handler, which aborts the process
    (exit -6, the jobs' finished rows never merged); ``signal.signal`` restores both levels.
    A signal that reaches the library's handler inside the block (Ray's raises
    ``SystemExit(signum)`` while Ray starts, for seconds) is a stop asked for
    (:func:`request`), raised as KeyboardInterrupt: the caller's interrupted path runs."""
    ours = [sig for sig in SIGNALS if signal.getsignal(sig) is handler]
    try:
        yield
    except SystemExit as exc:  # the library's own handler ran: Ray's exits with the signal's number
        if not isinstance(exc.code, int) or exc.code not in ours:
            raise
        request(exc.code)
        raise KeyboardInterrupt(f"signal {signal.Signals(exc.code).name}") from None
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig in ours:
                signal.signal(sig, handler)


def requested() -> bool:
    """True once a stop was asked for (a signal arrived since :func:`install`)."""
    return bool(_requested)


def check() -> None:
    """Raise KeyboardInterrupt when a stop was asked for: call it at safe points."""
    if _requested:
        raise KeyboardInterrupt(f"signal {signal.Signals(_requested[0]).name}")


@contextmanager
def shielded() -> Iterator[None]:
    """Inside the block even a second signal only records the request: for work that must
    finish once begun (merging the parts into items.parquet, writing the summary)."""
    _shielded.append(True)
    try:
        yield
    finally:
        _shielded.pop()


@contextmanager
def on_request(callback: Callable[[], object]) -> Iterator[None]:
    """Call ``callback()`` (from the signal handler) when a stop is asked for inside the
    block, or at once when one already was."""
    _callbacks.append(callback)
    try:
        if _requested:
            callback()
        yield
    finally:
        _callbacks.remove(callback)


@contextmanager
def on_request_call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: object) -> Iterator[None]:
    """:func:`on_request` scheduling ``fn(*args)`` on ``loop`` (``call_soon_threadsafe``), for
    a block that runs on that loop.

    A request from another thread (:func:`watch`, a sweep's job) takes its list of callbacks,
    then calls them: the block may end and the loop close in between. The callback is then
    dropped (the stop is recorded all the same, and :func:`check` sees it) instead of raising
    "Event loop is closed" in that thread (a traceback on the job's stderr, the thread gone)."""
    def callback() -> None:
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # closed after the request took its list: the block it served has ended
            if not loop.is_closed():
                raise

    with on_request(callback):
        yield
