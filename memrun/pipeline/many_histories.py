"""Many histories in flight: the retrieval stage for arms whose calls may overlap.

An arm is one of three kinds (:func:`memrun.arms.contract.arm_kind`, documented in docs/arms.md, "Concurrency"):

- ``async``: its ``ingest`` and ``search`` are coroutine functions; memrun awaits them on
  its event loop (``arm=http``, user arms written with ``async def``);
- ``threads``: a synchronous arm whose class sets ``thread_safe = True``; memrun runs its
  calls in a pool of ``arm.concurrency`` threads;
- ``sequential``: every other arm; its calls run one at a time, in dataset order, exactly
  as :func:`memrun.pipeline.one_history.iter_group` always did.

For the first two, up to ``arm.concurrency`` calls are in flight at once
(:class:`FlowSettings`), and up to that many histories are open: each history runs
ingest -> (``prepare_queries``) -> all its searches at once -> ``release`` (the arm's
optional hook to drop the history, e.g. erase its namespace), in that order. Such an arm's
``search`` takes the history as a keyword, ``search(query, k, history_id=...)``.
Histories are handed on in dataset order and items in group order, so rows come out in
the same order as a sequential run, with the same hits; only the latency columns differ.

Latency: ``search_latency_ms`` is the time inside the arm's ``search`` once it holds a
slot, less the waits the arm reports (:data:`memrun.core.http_policy.WAITED`: 429 waits,
backoffs, ``max_rps`` spacing); ``search_queue_ms`` is the time spent waiting for a slot
plus those waits. With ``warmup`` each query is searched twice and the second is timed
(the seed methodology's ``--warm 1``: the first call pays the server's cold caches).

Faults: a failing ingest errors its own history's items; a failing search its own item;
an :class:`~memrun.errors.ArmError` stops the run. When a stop is asked for (Ctrl-C,
SIGTERM: :func:`retrieve_all` sets :attr:`Flow.stopping`), the calls in flight finish, no
arm call starts after that, and every search that was answered is handed on: the open
histories give the items searched so far (in group order; the others have no row), so a
stop keeps every answered search. The caller's ``close`` then erases what the arm created
(``arm=http``: every namespace its ledger lists; a second Ctrl-C stops at once and leaves
them to the ledger).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from memrun.arms.contract import SEQUENTIAL, THREADS, arm_hooks, arm_kind
from memrun.core import signals
from memrun.core.http_policy import WAITED
from memrun.errors import ArmError, ConfigError, StopRequested
from memrun.pipeline.one_history import (
    INGESTED,
    Retrieved,
    arm_answer,
    check_hits,
    gold_reach,
    gold_texts,
    history_keys,
    iter_group,
    record_texts,
    sessions_of,
)
from memrun.pipeline.progress_lines import ACTIVITY
from memrun.records import GoldMatch, Group, Hit, Item

DEFAULT_CONCURRENCY = 16


@dataclass(frozen=True)
class FlowSettings:
    """``arm.concurrency`` (calls in flight to the arm, >= 1; 1 reproduces a sequential run's
    order of calls) and ``arm.warmup`` (time each query's second search)."""

    concurrency: int = DEFAULT_CONCURRENCY
    warmup: bool = False

    @classmethod
    def from_config(cls, arm: Mapping[str, Any]) -> FlowSettings:
        """The settings in an ``arm`` config node (a user arm without a schema may omit them).
        Raises ConfigError naming the key for a value that is not a positive integer / bool."""
        value = arm.get("concurrency", DEFAULT_CONCURRENCY)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"arm.concurrency={value!r}: must be a positive integer (1: one call at a time)")
        warmup = arm.get("warmup", False)
        if not isinstance(warmup, bool):
            raise ConfigError(f"arm.warmup={warmup!r}: must be true or false")
        return cls(int(value), warmup)


_FLOWS: weakref.WeakSet[Flow] = weakref.WeakSet()


def calls_in_flight() -> int | None:
    """Arm calls this process's flows have in flight now (``memrun view``'s progress of a
    running run); None when no flow is open (a sequential arm, or none started yet)."""
    flows = list(_FLOWS)
    return sum(f.in_flight for f in flows) if flows else None


class Flow:
    """Retrieval over many histories at once for an async or thread-safe arm (module docstring)."""

    def __init__(self, arm: Any, top_k: int, gold_match: GoldMatch, settings: FlowSettings,
                 answers: bool = False) -> None:
        self.arm, self.top_k, self.gold_match, self.settings = arm, top_k, gold_match, settings
        self.hooks = arm_hooks(arm)
        self.kind = self.hooks.kind
        self.answers = answers
        self.stopping = False
        self.failure: ArmError | None = None  # the first ArmError: no call starts after it
        self.in_flight = 0  # arm calls holding a slot now
        _FLOWS.add(self)
        self._slots: asyncio.Semaphore | None = None
        self._releases: set[asyncio.Task[None]] = set()
        self._pool = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="memrun-arm") \
            if self.kind == THREADS else None

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, float]:
        """(result, queue seconds, call seconds) of one arm call made when a slot is free."""
        assert self._slots is not None
        t0 = time.perf_counter()
        async with self._slots:
            if self.stopping or signals.requested():
                raise StopRequested
            t1 = time.perf_counter()
            waits: list[float] = []  # what the arm reports it waited (memrun.core.http_policy.WAITED)
            token = WAITED.set(waits)
            self.in_flight += 1
            try:
                result = await self._invoke(fn, args, kwargs)
            except ArmError as exc:  # the arm is misconfigured or refused: stop every history
                self.stopping = True
                self.failure = self.failure or exc
                raise
            finally:
                self.in_flight -= 1
                WAITED.reset(token)
            waited = sum(waits)
            return result, (t1 - t0) + waited, max(time.perf_counter() - t1 - waited, 0.0)

    async def _invoke(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Await ``fn``'s coroutine, or run it in the thread pool (a thread-safe arm)."""
        if self._pool is not None:
            return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        result = fn(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    async def _ingest(self, group: Group) -> str | None:
        try:
            await self._call(self.arm.ingest, group.history_id, group.records)
        except (ArmError, StopRequested):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the history's items
            ACTIVITY.advance(INGESTED, 1, records=len(group.records))
            return f"ingest: {type(exc).__name__}: {exc}"
        ACTIVITY.advance(INGESTED, 1, records=len(group.records))
        prepare = self.hooks.prepare_queries
        if prepare is not None:
            try:
                await self._call(prepare, [item.question for item in group.items])
            except (ArmError, StopRequested):
                raise
            except Exception:  # noqa: BLE001 - each search then prepares its own query
                pass
        return None

    async def _search(self, group: Group, item: Item) -> tuple[list[Hit] | None, float | None, float | None, str | None]:
        """(hits, latency ms, queue ms, error) of one item's search."""
        try:
            for _ in range(2 if self.settings.warmup else 1):
                result, queued, took = await self._call(self.arm.search, item.question, self.top_k,
                                                        history_id=group.history_id)
        except (ArmError, StopRequested):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the item
            return None, None, None, f"search: {type(exc).__name__}: {exc}"
        return check_hits(self.arm, result), took * 1000.0, queued * 1000.0, None

    def _release(self, group: Group) -> None:
        """Start the arm's optional ``release`` of a finished history in the background: the
        history's rows do not wait for it (:meth:`groups` awaits it before it returns)."""
        release = self.hooks.release
        if release is not None and not self.stopping:
            self._releases.add(asyncio.create_task(self._release_now(release, group.history_id)))

    async def _release_now(self, release: Callable[..., Any], history_id: str) -> None:
        try:
            await self._call(release, history_id)
        except (ArmError, StopRequested):
            pass  # stopping: close() erases what is left
        except Exception:  # noqa: BLE001 - the arm warns; close() tries again
            pass

    async def history(self, group: Group) -> list[Retrieved]:
        """Ingest one history, search all its items at once, release it; its items' results in
        order. Once a stop is asked for, the items whose search was answered (none when the
        ingest had not finished), and the history is left to ``close``."""
        try:
            error = await self._ingest(group)
        except StopRequested:
            return []
        session_of, known, n = sessions_of(group), history_keys(group), len(group.records)
        texts, reach = record_texts(group), gold_reach(group, self.gold_match)
        if error is not None:
            self._release(group)
            return [Retrieved(item, None, None, error, None, session_of, known, n,
                              gold_texts=gold_texts(item, texts, self.gold_match), gold_unreachable=reach(item))
                    for item in group.items]
        # every search ends before the history does (a stop must not orphan calls in flight)
        found = await asyncio.gather(*(self._search(group, item) for item in group.items), return_exceptions=True)
        for outcome in found:
            if isinstance(outcome, BaseException) and not isinstance(outcome, StopRequested):
                raise outcome  # an ArmError: _search records every other failure itself
        if not any(isinstance(outcome, StopRequested) for outcome in found):
            self._release(group)
        answer_for = self.hooks.answer_for if self.answers else None
        out = []
        for item, outcome in zip(group.items, found):
            if isinstance(outcome, BaseException):
                continue  # a stop came before its search: no row, a rerun searches it
            hits, latency, queued, err = outcome
            answer, err = arm_answer(answer_for, item, err)
            out.append(Retrieved(item, hits, latency, err, answer, session_of, known, n, queue_ms=queued,
                                 gold_texts=gold_texts(item, texts, self.gold_match), gold_unreachable=reach(item)))
        return out

    async def groups(self, groups: Iterable[Group]) -> AsyncGenerator[tuple[Group, list[Retrieved]], None]:
        """Each group with its items' results, in dataset order; up to ``concurrency``
        histories are open at once. A history that finishes before the ones ahead of it
        frees its place at once (its results wait, up to ``concurrency`` of them, to be
        handed on in order), so one slow history does not hold the others back.
        Closing the iterator (or cancelling its consumer) lets the calls in flight finish
        and starts no further arm call."""
        concurrency = self.settings.concurrency
        self._slots = asyncio.Semaphore(concurrency)
        pending: deque[tuple[Group, asyncio.Task[list[Retrieved]]]] = deque()
        source = iter(groups)
        try:
            while True:
                open_ = sum(not task.done() for _, task in pending)
                while open_ < concurrency and len(pending) < 2 * concurrency and not self.stopping:
                    group = next(source, None)
                    if group is None:
                        break
                    pending.append((group, asyncio.create_task(self.history(group))))
                    open_ += 1
                if not pending:
                    await asyncio.gather(*self._releases)
                    if self.failure is not None:
                        raise self.failure
                    return
                group, task = pending[0]
                if not task.done():  # wait for any history (not the first: it may be the slow one)
                    # asyncio.wait cancels nothing when a stop cancels it: calls in flight finish
                    await asyncio.wait([t for _, t in pending if not t.done()], return_when=asyncio.FIRST_COMPLETED)
                    continue
                result = task.result()  # an ArmError propagates; a stop gives what was answered
                pending.popleft()
                yield group, result
        finally:
            # Stopping (a stop was asked for, an ArmError, the consumer gave up): calls in
            # flight finish, as a sequential run finishes its current call; every other
            # call of the open histories ends at once with StopRequested, sending nothing.
            self.stopping = True
            await asyncio.gather(*(t for _, t in pending), *self._releases, return_exceptions=True)
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            await disconnect(self.arm)


async def disconnect(arm: object) -> None:
    """Await the arm's optional ``disconnect()`` (close connections bound to this event loop)."""
    hook = arm_hooks(arm).disconnect
    if inspect.iscoroutinefunction(hook):
        try:
            await hook()
        except Exception:  # noqa: BLE001 - connections only; close() still runs
            pass


async def retrieved_groups(arm: Any, groups: Iterable[Group], top_k: int, gold_match: GoldMatch,
                           settings: FlowSettings, offload: Callable[[], bool] = lambda: False,
                           answers: bool = True) -> AsyncGenerator[tuple[Group, list[Retrieved]], None]:
    """Every group with its items' results, in dataset order, for any kind of arm: a
    :class:`Flow` for async and thread-safe arms; for a sequential arm each group is
    retrieved when asked for, in a worker thread while ``offload()`` is true (calls are in
    flight on the loop), else on the loop itself. ``answers``: take the arm's own answers."""
    if arm_kind(arm) != SEQUENTIAL:
        flow = Flow(arm, top_k, gold_match, settings, answers=answers)
        async for pair in flow.groups(groups):
            yield pair
        return

    hooks = arm_hooks(arm)  # bound once for the run, not once a history

    def one(group: Group) -> list[Retrieved]:
        return list(iter_group(arm, group, top_k, gold_match, answers=answers, warmup=settings.warmup, hooks=hooks))

    for group in groups:
        yield group, (await asyncio.to_thread(one, group) if offload() else one(group))


def iter_retrieved(arm: Any, groups: Iterable[Group], top_k: int, gold_match: GoldMatch,
                   settings: FlowSettings) -> Iterator[tuple[Group, list[Retrieved]]]:
    """:func:`retrieved_groups` for plain (non-async) code, e.g. ``memrun plan``: each group
    with its items' results (the arm's own answers taken), in dataset order."""
    if arm_kind(arm) == SEQUENTIAL:
        hooks = arm_hooks(arm)
        for group in groups:
            yield group, list(iter_group(arm, group, top_k, gold_match, answers=True, warmup=settings.warmup,
                                         hooks=hooks))
        return
    loop = asyncio.new_event_loop()
    pairs = Flow(arm, top_k, gold_match, settings, answers=True).groups(groups)
    try:
        while True:
            try:
                yield loop.run_until_complete(anext(pairs))
            except StopAsyncIteration:
                return
    finally:
        loop.run_until_complete(pairs.aclose())
        loop.close()


def retrieve_all(arm: Any, groups: Iterable[Group], top_k: int, gold_match: GoldMatch, settings: FlowSettings,
                 on_item: Callable[[Retrieved], None]) -> None:
    """The retrieval axis: every item's result, in dataset order, to ``on_item``. A stop
    (Ctrl-C, SIGTERM; :mod:`memrun.core.signals`) raises KeyboardInterrupt between items for a
    sequential arm, and for a concurrent one once the calls in flight have answered and
    every answered search was handed to ``on_item``."""
    if arm_kind(arm) == SEQUENTIAL:
        hooks = arm_hooks(arm)
        for group in groups:
            for r in iter_group(arm, group, top_k, gold_match, warmup=settings.warmup, hooks=hooks):
                on_item(r)
                signals.check()  # Ctrl-C / SIGTERM stop here, between items
        return

    async def main() -> None:
        loop = asyncio.get_running_loop()
        flow = Flow(arm, top_k, gold_match, settings)

        def stop() -> None:  # no call starts any more; the open histories hand on what was answered
            flow.stopping = True

        with signals.on_request_call_soon(loop, stop):
            async for _, retrieved in flow.groups(groups):
                for r in retrieved:
                    on_item(r)

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        signals.check()  # cancelled because a stop was asked for: end as interrupted
        raise
    signals.check()

