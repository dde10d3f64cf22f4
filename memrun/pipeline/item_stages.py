"""The stages over a run's items: ingest and search (the retrieval axis) and answer and judge
(the accuracy axis), with the row sink every item's row goes through and the progress bar.

Retrieval itself is :mod:`memrun.pipeline.many_histories`'s (many histories in flight per
``arm.concurrency``); the answer stage is :mod:`memrun.accuracy.stage`'s. Ctrl-C and
SIGTERM stop both at a safe point (:mod:`memrun.core.signals`).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias

from memrun.arms import Arm
from memrun.core import signals
from memrun.core.instrument import Instrument
from memrun.core.redaction import Redactor
from memrun.io.live import LiveStatus
from memrun.io.writer import ItemsWriter
from memrun.lazy import lazy, loaded
from memrun.pipeline.checks import HitChecks
from memrun.pipeline.many_histories import retrieve_all, retrieved_groups
from memrun.pipeline.one_history import INGESTED, Retrieved, make_row
from memrun.pipeline.spec import RunSpec
from memrun.records import Dataset

# The accuracy axis only: a retrieval run never starts an event loop (memrun.lazy).
if TYPE_CHECKING:
    import asyncio

    import uvloop
    from rich.console import Console
    from rich.progress import Progress

    from memrun.accuracy import stage as accuracy_stage
    from memrun.accuracy.setup import AccuracySetup
    from memrun.pipeline import progress_bar, progress_lines
else:
    asyncio = lazy("asyncio")
    uvloop = lazy("uvloop")  # the calls' event loop where it is installed (calls_loop)
    accuracy_stage = lazy("memrun.accuracy.stage")
    progress_lines = lazy("memrun.pipeline.progress_lines")
    progress_bar = lazy("memrun.pipeline.progress_bar")  # rich's bar: a terminal's only

PROGRESS_SECONDS = 0.1
IDLE_PROGRESS_SECONDS = 1.0
"""The calls line is redrawn this often too while no row finishes (calls in flight, waiting)."""
# Container allocations (net) between two young-generation collections while calls are in
# flight; Python's default is 700. See calls_collector.
CALLS_GC_THRESHOLD = 100_000


def calls_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop the answer stage's calls run on: uvloop's where it is installed (a
    dependency on Linux and macOS), else None for asyncio's own.

    uvloop runs the loop itself, its sockets and its timers in C (aiohttp's and memrun's own
    Python code is the same on both): a cold LoCoMo run of 3,600 calls at 128 in flight ran
    6% fewer user-space instructions outside its imports and its writer thread (callgrind),
    and 12,000 calls ~5% less CPU, whole process (median of alternated pairs at load 5-9,
    spread +-10%). Every task, future and callback keeps asyncio's semantics (uvloop
    implements the same event loop interface).
    """
    try:
        return loaded(uvloop).new_event_loop
    except ImportError:
        return None


@contextmanager
def calls_collector() -> Iterator[None]:
    """The cyclic collector's settings while the answer stage's calls are in flight.

    What start-up built is frozen: a full collection would walk it (modules, configs, the
    arm's index; ~0.1 s, during which every call in flight waits on the event loop). And
    the young generation is collected every :data:`CALLS_GC_THRESHOLD` allocations (net)
    instead of every 700: each collection walks every young object alive, and with 128
    requests in flight (each an HTTP exchange's buffers, futures and parsers) that was
    ~0.5 ms, ~900 times in a 12,000-call run, 1.3 s of its 12 s of CPU. What a run keeps
    grows the count too (each row: a dict of ~100 columns and its lists; each reply), so
    at 10,000 a cold 12,000-call run still collected 5-7 times, 7-10 ms each, walking the
    rows made since the last one and the calls in flight again (49-53 ms of the event
    loop's CPU, timed by gc callbacks); at 100,000 it collects none (a longer run once every
    ~15,000 calls, each collection longer, the calls in flight walked a tenth as often).
    The objects those calls leave are freed by their reference counts; only cycles wait for
    a collection (~100 objects per 10,000 allocations here), and there are at most that many
    allocations of them. Both settings are restored on exit, and everything frozen meanwhile
    is unfrozen (the answer stage freezes what each group left alive while no call is in
    flight: :meth:`memrun.accuracy.stage.AnswerStage._settle`) into the oldest generation,
    with what the stage left in the young one: its rows and replies (a cold run's, all made
    since its last young collection) would otherwise be walked by the first collection after
    it, at the restored threshold (30 ms of the bench's cold run, before its summary).
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], CALLS_GC_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.freeze()  # the young generation too (docstring)
        gc.unfreeze()


class RowSink:
    """Where each item's row goes: scored (:func:`memrun.pipeline.one_history.make_row`), redacted, kept
    in ``rows`` and streamed to the writer; failed rows are counted on the instrument."""

    def __init__(self, spec: RunSpec, dataset: Dataset, instrument: Instrument, writer: ItemsWriter,
                 redactor: Redactor, search_mode: str | None, live: LiveStatus | None = None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.checks = HitChecks(spec.top_k, search_mode, dataset.gold_match)
        self._spec, self._dataset, self._instrument = spec, dataset, instrument
        self._writer, self._redactor, self._scored = writer, redactor, search_mode != "none"
        self._live = live  # memrun view's progress of this run (memrun.io.live)

    def emit(self, row: dict[str, Any]) -> None:
        """Redact, keep and write one finished row."""
        self._redactor.row(row, ("error",))
        self.rows.append(row)
        self._writer.add(row)
        if row.get("error"):
            self._instrument.n_errors += 1
        if self._live is not None:
            self._live.row(bool(row.get("error")) or row.get("label") == "error")

    @property
    def run_id(self) -> str | None:
        """The run's id (its rows carry it)."""
        return self._instrument.run_id

    @property
    def n_errors(self) -> int:
        """Rows that failed so far."""
        return self._instrument.n_errors

    def item_row(self, r: Retrieved) -> dict[str, Any]:
        """The row of one retrieved item (its checks observed once per item, on both axes)."""
        self.checks.observe(r)
        return make_row(self._instrument.run_id, r, self._dataset, self._spec.ks, self._spec.top_k,
                        scored=self._scored)


def thousands(n: int) -> str:
    """``n`` in at most 4 characters plus a unit: 950, 12k, 3.4M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 9_950 else f"{round(n / 1000)}k"
    return f"{n / 1_000_000:.1f}M"


def start_activity(dataset: Dataset) -> None:
    """Open the progress line's ingest phase (histories of ``dataset``; total when it is a list)."""
    progress_lines.ACTIVITY.clear()
    groups = dataset.groups
    progress_lines.ACTIVITY.start(INGESTED, len(groups) if isinstance(groups, list) else None, "histories")


ProgressBar: TypeAlias = "Progress | progress_lines.PlainProgress"
"""rich's bar on a terminal, else its stand-in printing plain lines (:func:`make_progress`)."""


def make_progress(console: Console | None, enabled: bool, calls: bool = False) -> ProgressBar:
    """The progress bar: rich's on a terminal (:func:`memrun.pipeline.progress_bar.rich_bar`, on
    ``console``; None: stdout's); a stderr that is not a terminal (CI logs, nohup) gets a plain
    line every few seconds instead, and ``enabled=False`` (``progress=false``) nothing at all."""
    if not enabled:
        return progress_lines.PlainProgress(quiet=True)
    if not sys.stderr.isatty():
        return progress_lines.PlainProgress()
    return progress_bar.rich_bar(console, calls)


def ingest_and_search(spec: RunSpec, dataset: Dataset, arm: Arm, sink: RowSink, progress: ProgressBar) -> None:
    """The retrieval axis: ingest each group, search each item, emit its row (in dataset order)."""
    task = progress.add_task(spec.label, total=dataset.n_items, errors=0)
    start_activity(dataset)

    def on_item(r: Retrieved) -> None:
        sink.emit(sink.item_row(r))
        progress.update(task, advance=1, errors=sink.n_errors)

    retrieve_all(arm, dataset.groups, spec.top_k, dataset.gold_match, spec.flow, on_item)


def answer_and_judge(spec: RunSpec, setup: AccuracySetup, dataset: Dataset, arm: Arm, sink: RowSink,
                     progress: ProgressBar, done: set[tuple[str, int]] | None = None) -> str | None:
    """The accuracy axis: retrieve, answer and judge every item x repeat, emitting each row;
    returns why it stopped early (token budget) or None. ``done``: (item_id, repeat) pairs
    a resumed run already holds (:mod:`memrun.pipeline.resume`), not answered again."""
    stats = setup.llm.stats
    t0 = shown = time.perf_counter()
    rows = errors = 0

    def show() -> None:
        rate = stats.made / max(time.perf_counter() - t0, 1e-9)
        waiting = f" ({setup.llm.in_flight} in flight)" if setup.llm.in_flight else ""  # sent, no reply yet
        progress.update(task, completed=rows, errors=errors, calls=f"{stats.made} calls{waiting} {rate:.0f}/s "
                                                                   f"{stats.cached} cached {thousands(stats.tokens)} tok")

    def on_row(row: dict[str, Any]) -> None:
        nonlocal rows, errors, shown
        sink.emit(row)
        rows += 1
        errors += row.get("label") == "error"
        if time.perf_counter() - shown >= PROGRESS_SECONDS:  # the bar redraws at 10 Hz; rows come faster
            shown = time.perf_counter()
            show()

    stage = accuracy_stage.AnswerStage(setup, dataset, sink.item_row, on_row, done or set())
    task = progress.add_task(spec.label, total=stage.total, errors=0, calls="0 calls")
    start_activity(dataset)

    async def refresh() -> None:  # the calls line moves while no row finishes (calls waiting on a slow server)
        while True:
            await asyncio.sleep(IDLE_PROGRESS_SECONDS)
            show()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        refresher = loop.create_task(refresh())
        try:
            # Ctrl-C / SIGTERM: the stage finishes the calls in flight (cached, paid for once) and
            # starts nothing new (AnswerStage.stop), on the loop (memrun.core.signals); a second
            # signal stops at once.
            with signals.on_request_call_soon(loop, stage.stop, "a stop was asked for"):
                await stage.run(retrieved_groups(arm, dataset.groups, spec.top_k, dataset.gold_match, spec.flow,
                                                 offload=lambda: setup.llm.in_flight > 0))
        finally:
            refresher.cancel()
            await setup.llm.aclose()

    try:
        with calls_collector(), asyncio.Runner(loop_factory=calls_loop()) as runner:  # asyncio.run on calls_loop
            runner.run(main())
        signals.check()  # the stage ended because a stop was asked for: end as interrupted
    finally:
        show()
    return stage.stopped
