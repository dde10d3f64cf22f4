"""The answer stage of an accuracy run: retrieve once per item, then read and judge N times.

Groups are retrieved one after another, and as soon as a group's items are retrieved,
its item x repeats are queued, and ``concurrency`` workers take them in order
(:mod:`memrun.accuracy.row_queue`): each reads (or takes the arm's own answer) and judges
one item x repeat, then takes the next. At most ``concurrency`` item x repeats are in
progress at once (their calls are sequential, so as many calls are in flight), which
finishes started items before new ones begin: rows arrive steadily, and a crash or budget
stop loses at most the items in progress. An item x repeat whose calls are all in the
cache (a re-run) never waits: its worker finishes it at once and takes the next. Each
finished item x repeat becomes one row, handed to ``emit`` at once (so the writer
persists it as it finishes).

Retrieval stays just ahead of the answers: the next group is taken once fewer than
``concurrency`` item x repeats are queued for a slot. While groups' rows all finish from the
cache at once (a re-run), the next groups are taken together, until they hold as
many item x repeats as there is room for, and their cached replies are read in one query
for the readers and one for the judge: per query and per group, sqlite's pages and the
stage's own code stay in the CPU's caches (the bench's cached re-run of 200 groups: 5
groups a batch, the stage's CPU ~8% less; the rows and their order are the same). A group
whose calls are made is taken alone, so that its calls do not wait for the retrieval of
the next groups. Groups come, in dataset order, from
:func:`memrun.pipeline.many_histories.retrieved_groups`: an async or thread-safe arm retrieves up to
``arm.concurrency`` histories at once on this event loop; a sequential arm retrieves each
group when it is taken, in a worker thread while calls are in flight (the event loop
keeps serving them) and on the loop itself when none is (a re-run answered from the
cache, or the first group), since a thread would only make the two take turns on the
GIL, each cache query waiting up to a switch interval (5 ms) to get it back.

Failures never become misses: a failed retrieval, reader or judge call, an unreadable
verdict, or a context overflow gives label ``error`` and a one-line ``error``; such
rows are counted and excluded from every ratio. When the token budget runs out the
stage stops starting calls, lets cached work finish and sets :attr:`AnswerStage.stopped`.
A :class:`~memrun.errors.MemrunError` from a call (a refused key: every later call would
be refused too) stops the stage the same way, and :meth:`AnswerStage.run` raises it once
the calls in flight have finished, so the run ends ``failed`` with the rows so far.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any

from memrun.accuracy.row_queue import RowQueue
from memrun.accuracy.setup import AccuracySetup
from memrun.errors import BudgetExhausted, ItemFailed, MemrunError, StopRequested
from memrun.judges import Case, is_abstention, judge_hooks
from memrun.judges.lexical import lexical_scores
from memrun.llm.client import CallError, ChatRequest, ChatResult
from memrun.llm.reader import Prepared, Reader
from memrun.metrics.failure import failure_stage
from memrun.metrics.stale import SUPERSEDED_KEY, stale_label
from memrun.pipeline.one_history import Retrieved
from memrun.records import Dataset, Group, Item, Record
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, WRONG

Row = dict[str, Any]
Queued = tuple[Retrieved, Row, Mapping[str, Record], "Prepared | None", list[Case]]
"""An item x repeat to answer: its retrieval, its row so far, its group's records, its reader
request, and the judge cases made for its item so far (one per answer, shared by its repeats:
a case is a function of the item and the answer, and an item's repeats mostly answer alike)."""
# Row fields holding text that came from an LLM endpoint or an error: the only places a
# key echoed by a server could land, so the only ones redacted (the replies as replies:
# the URLs a reader answers with are kept, but for the config's own secrets).
REPLY_TEXT = ("reader_answer", "judge_explanation", "judge2_explanation")
ANSWERED = dict.fromkeys(("answer_source", "context_dropped", "answer_latency_ms", "context_tokens",
                          "completion_tokens", "reader_cache_hit", "reader_answer", "label", "judge_score",
                          "judge_explanation", "judge_prompt", "judge_cache_hit", "judge_tokens"))
"""The columns an answered row gets (:meth:`AnswerStage._answer_and_judge`), None in an item's
base row before its repeats copy it: a copy then has room for them. A base row's ~84 columns
fill its dict's table (room for 85), so each repeat's first new column made its copy grow,
every entry moved (~3.4 us a row, 6,000 in the bench's cached re-run); now the base grows,
once an item. A column a row does not get stays None, as a missing one reads (the table's
null; ``row.get``), and as the rows of a resumed run hold every column."""


def reader_request(reader: Reader | None, r: Retrieved, records: Mapping[str, Record],
                   memo: dict[tuple[str, str], str] | None = None) -> Prepared | None:
    """The reader's request for ``r`` as a run sends it (None: the arm answers, or retrieval
    failed); ``memo``: the context lines made so far for ``r``'s history (:meth:`Reader.prepare`).
    Shared with :mod:`memrun.pipeline.plan`, which looks the same requests up in the cache."""
    if reader is None or r.error is not None:
        return None
    return reader.prepare(r.item, r.hits or [], records, memo)


def judge_case(item: Item, category_label: str, answer: str, substring_gold: bool,
               abstention_categories: Sequence[str]) -> Case:
    """What the judges grade for one answer to ``item`` (shared with :mod:`memrun.pipeline.plan`)."""
    return Case(
        item=item,
        category_label=category_label,
        answer=answer,
        gold=item.answer,
        gold_keys=tuple(item.gold_keys) if substring_gold else (),
        abstention=is_abstention(item, category_label, abstention_categories),
    )


def answer_text(result: ChatResult) -> str:
    """The answer a reader's reply gives: its text, stripped."""
    return result.text.strip()


class AnswerStage:
    """Runs reader and judges over a dataset (see the module docstring).

    make_row: builds the retrieval part of a row from a :class:`Retrieved`.
    emit: receives each finished row (already redacted).
    done: (item_id, repeat) pairs that already have a row (a resumed run): not answered.
    """

    def __init__(
        self,
        setup: AccuracySetup,
        dataset: Dataset,
        make_row: Callable[[Retrieved], Row],
        emit: Callable[[Row], None],
        done: set[tuple[str, int]] | None = None,
    ) -> None:
        self.setup = setup
        self.done = done or set()
        self.dataset = dataset
        self.make_row = make_row
        self.emit = emit
        self.judge2_items = setup.judge2_items(dataset)
        self._judge2_first: set[str] = set()  # lazy groups without an index: the first items seen
        self.abstention_categories = judge_hooks(setup.judge).abstention_categories
        self.substring_gold = dataset.gold_match == "substring"
        self.stale_check = setup.stale_check
        self.stopped: str | None = None
        self.fatal: MemrunError | None = None  # an error that stops the run (a refused key): raised by run()
        self._rows = RowQueue(setup.llm.concurrency, self._row, lambda: bool(self.stopped or self.fatal))
        self._failure_stages: dict[str, str | None] = {}  # item_id -> its failure stage (_failure_stage)
        self._taking: asyncio.Future[Any] | None = None  # the next groups being retrieved (run)

    def stop(self, reason: str) -> None:
        """Finish the work in progress and start nothing new: no new group is taken, a row not
        yet holding a slot is left unwritten, the calls in flight finish and are cached, and a
        row in progress whose next call would be sent ends there, unwritten (its calls made so
        far come from the cache next time). :meth:`run` then returns. Call it on the loop."""
        self.stopped = self.stopped or reason
        self.setup.llm.stop_new_calls(reason)
        self._rows.room.set()
        if self._taking is not None:  # a group being retrieved: its items would only wait
            self._taking.cancel()

    @property
    def total(self) -> int | None:
        """Rows the stage will produce when it runs to the end (None: unknown, lazy groups)."""
        n = self.dataset.n_items
        if n is None or not self.done:
            return None if n is None else n * self.setup.repeats
        if not isinstance(self.dataset.groups, list):
            return None  # resumed over lazy groups: which of them are left is known as they come
        ids = {i.item_id for g in self.dataset.groups for i in g.items}
        return n * self.setup.repeats - sum(1 for item_id, repeat in self.done if item_id in ids and repeat < self.setup.repeats)

    async def run(self, groups: AsyncGenerator[tuple[Group, list[Retrieved]], None]) -> None:
        """Take each retrieved group and answer its items (see the module docstring); return
        when all rows are emitted. ``groups``: each group with its items' retrieval results."""
        rows = self._rows
        queued, room = rows.queued, rows.room
        ahead = self.setup.llm.concurrency
        eager = False  # the last groups' rows all finished from the cache at once
        try:
            while True:
                while len(queued) >= ahead and not (self.stopped or self.fatal):
                    room.clear()
                    await room.wait()
                if self.stopped or self.fatal:
                    break
                # a task, so that stop() can cancel a retrieval that is under way (an ingest may take minutes)
                self._taking = asyncio.ensure_future(self._take(groups, max(ahead - len(queued), 1) if eager else 1))
                try:
                    batch = await self._taking
                except asyncio.CancelledError:
                    me = asyncio.current_task()
                    if self.stopped and not (me is not None and me.cancelling()):  # stop() cancelled the retrieval
                        break
                    raise
                finally:
                    self._taking = None
                if not batch:
                    break
                if self.setup.reader is not None:  # the reader's cached replies read in one query
                    self.setup.llm.prefetch(self.setup.reader.endpoint, [
                        (p.request, repeat) for _, _, p in batch if p is not None and p.request is not None
                        for repeat in range(self.setup.repeats)])
                bases = [self.make_row(r) | ANSWERED for r, _, _ in batch]  # retrieval is scored once per item
                cases: list[list[Case]] = [[] for _ in batch]  # each item's, shared by its repeats (Queued)
                self._prefetch_verdicts([r for r, _, _ in batch], [p for _, _, p in batch], bases, cases)
                for (r, records, p), base, shared in zip(batch, bases, cases):
                    item_id = r.item.item_id
                    for repeat in range(self.setup.repeats):
                        if (item_id, repeat) in self.done:
                            continue  # its row came from the run this one resumes
                        rows.add((r, dict(base, repeat=repeat), records, p, shared))
                rows.start()
                await asyncio.sleep(0)  # let the workers take the new rows before deciding on the next groups
                eager = not (queued or rows.busy)  # every row of these groups finished at once
                self._settle()
            await rows.finish()
        finally:
            rows.cancel()
            await groups.aclose()  # open histories cancelled; no arm call starts after this
        if self.fatal is not None:
            raise self.fatal

    async def _take(self, groups: AsyncGenerator[tuple[Group, list[Retrieved]], None],
                    room: int) -> list[tuple[Retrieved, Mapping[str, Record], Prepared | None]]:
        """The next groups' items, each with its group's records and its reader request, taken
        until they hold ``room`` item x repeats (or the groups end, or the stage stops): their
        replies are then read ahead in one query for them all (module docstring)."""
        batch: list[tuple[Retrieved, Mapping[str, Record], Prepared | None]] = []
        rows = 0
        while rows < room and not (self.stopped or self.fatal):
            try:
                group, retrieved = await anext(groups)
            except StopAsyncIteration:
                break
            records = {r.key: r for r in group.records}
            lines: dict[tuple[str, str], str] = {}  # the history's context lines, made once each
            batch += [(r, records, self._prepare(r, records, lines)) for r in retrieved]  # each prompt built once
            rows += len(retrieved) * self.setup.repeats
        return batch

    def _settle(self) -> None:
        """Take what is alive now out of the cyclic collector's sight (``gc.freeze``) when no
        call is in flight: a cached re-run's rows, kept to the end of the run, were otherwise
        walked by the young-generation collections they lived through (the bench's 6,000-row
        re-run: 4 collections, 78-81 ms at load 9-10, timed by gc callbacks; none now).
        Frozen objects are still freed by their reference counts; only a cycle among them waits,
        until the stage ends (:func:`memrun.pipeline.item_stages.calls_collector` unfreezes
        everything then). Not while calls are in flight: their HTTP exchanges leave cycles, which
        a young collection frees (a cold run is unchanged)."""
        if self.setup.llm.in_flight == 0:
            gc.freeze()

    def _prepare(self, r: Retrieved, records: Mapping[str, Record],
                 memo: dict[tuple[str, str], str]) -> Prepared | None:
        return reader_request(self.setup.reader, r, records, memo)

    def _prefetch_verdicts(self, retrieved: Sequence[Retrieved], prepared: Sequence[Prepared | None],
                           bases: Sequence[Row], cases: Sequence[list[Case]]) -> None:
        """Read the judge's cached replies to the reader answers already read from the cache
        (a re-run: every one) in one query, as the readers' were: grading them then never
        waits for the event loop to batch their lookups; the cases graded are added to each
        item's ``cases`` (:data:`Queued`)."""
        reader, judge, llm = self.setup.reader, self.setup.judge, self.setup.llm
        hooks = judge_hooks(judge)
        request_for, endpoint = hooks.request, hooks.endpoint
        if reader is None or request_for is None or endpoint is None:
            return
        calls = []
        for r, p, base, shared in zip(retrieved, prepared, bases, cases):
            if p is None or p.request is None or p.overflow:
                continue
            by_answer: dict[str, tuple[Case, ChatRequest]] = {}  # repeats that answered alike share both
            for repeat in range(self.setup.repeats):
                result = llm.prefetched(reader.endpoint, p.request, repeat)
                if result is not None:
                    answer = answer_text(result)
                    known = by_answer.get(answer)
                    if known is None:
                        case = judge_case(r.item, str(base["category_label"]), answer, self.substring_gold,
                                          self.abstention_categories)
                        known = by_answer[answer] = (case, request_for(case)[1])
                        shared.append(case)  # the rows' judge grades it (_answer_and_judge)
                    calls.append((known[1], repeat))
        if calls:
            llm.prefetch(endpoint, calls)

    async def _row(self, queued: Queued) -> None:
        r, row, records, prepared, cases = queued
        repeat = int(row["repeat"])
        try:
            if r.error is not None:
                raise ItemFailed(r.error)
            await self._answer_and_judge(row, r, repeat, records, prepared, cases)
        except ItemFailed as exc:
            row["label"] = ERROR
            row["error"] = str(exc)
        except (BudgetExhausted, StopRequested) as exc:  # the budget ran out, or a stop was asked for (stop())
            self.stopped = self.stopped or str(exc)
            return  # unfinished: not written; its finished calls are cached
        except MemrunError as exc:  # e.g. AuthError: every later call would fail the same way
            if self.fatal is None:
                self.fatal = exc
            self._rows.room.set()  # wake the dispatcher, which then starts nothing more
            return
        self.emit(self.setup.redactor.row(self.setup.redactor.row(row, REPLY_TEXT, replies=True), ("error",)))

    def _judge2_wanted(self, item_id: str) -> bool:
        sample = self.setup.judge2_sample
        if sample is None:
            return True
        if self.judge2_items is not None:
            return item_id in self.judge2_items
        if item_id not in self._judge2_first and len(self._judge2_first) < sample:
            self._judge2_first.add(item_id)
        return item_id in self._judge2_first

    async def _answer(self, row: Row, r: Retrieved, repeat: int, prepared: Prepared | None) -> str:
        reader = self.setup.reader
        if reader is None or prepared is None:
            row["answer_source"] = "arm"
            if r.arm_answer is None:
                raise ItemFailed("answer: the arm has no answer for this item")
            return r.arm_answer
        row["answer_source"] = "reader"
        row["context_dropped"] = prepared.dropped
        if prepared.overflow:
            raise ItemFailed(prepared.overflow)
        try:
            outcome = await reader.answer(prepared, repeat)
        except CallError as exc:
            if exc.kind == "context_overflow":
                raise ItemFailed(f"context_overflow: {exc}{reader.overflow_hint}") from None
            raise ItemFailed(f"reader: {exc}") from None
        result = outcome.result
        row.update(
            answer_latency_ms=result.latency_ms,
            context_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            reader_cache_hit=outcome.cached,
        )
        return answer_text(result)

    async def _answer_and_judge(
        self, row: Row, r: Retrieved, repeat: int, records: Mapping[str, Record], prepared: Prepared | None,
        cases: list[Case],
    ) -> None:
        answer = await self._answer(row, r, repeat, prepared)
        row["reader_answer"] = answer
        item = r.item
        for case in cases:  # made by another repeat of the item, or when its verdict was read ahead
            if case.answer == answer:
                break
        else:
            case = judge_case(item, str(row["category_label"]), answer, self.substring_gold, self.abstention_categories)
            cases.append(case)
        try:
            verdict = await self.setup.judge.grade(case, repeat)
        except CallError as exc:
            raise ItemFailed(f"judge: {exc}") from None
        row.update(
            label=verdict.label,
            judge_score=verdict.score,
            judge_explanation=verdict.explanation,
            judge_prompt=verdict.prompt,
            judge_cache_hit=verdict.cached,
            judge_tokens=verdict.tokens,
        )
        if verdict.details:
            row.update(verdict.details)
        if verdict.label == ERROR:
            row["error"] = f"judge: {verdict.explanation}"
        judge2 = self.setup.judge2
        if judge2 is not None and self._judge2_wanted(item.item_id):
            try:
                second = await judge2.grade(case, repeat)
                row["judge2_label"], row["judge2_explanation"] = second.label, second.explanation
            except CallError as exc:
                row["judge2_label"], row["judge2_explanation"] = ERROR, f"judge2: {exc}"
        if self.setup.lexical_scores:
            row.update(lexical_scores(answer, item.answer))
        if self.stale_check:
            row["stale"] = stale_label(
                category=item.category, correct=None if verdict.label == ERROR else verdict.label == CORRECT,
                response=answer, superseded=item.extra.get(SUPERSEDED_KEY),
            )
        if verdict.label in (WRONG, ABSTAIN):
            row["failure_stage"] = self._failure_stage(row, r, case, records)

    def _failure_stage(self, row: Row, r: Retrieved, case: Case, records: Mapping[str, Record]) -> str | None:
        """The failure stage of a missed answer to ``r`` (:func:`memrun.metrics.failure.failure_stage`):
        a function of the item, its hits and their records only, so found once per item and
        given to each of its repeats that missed (it folds every hit's text)."""
        item_id = r.item.item_id
        if item_id in self._failure_stages:
            return self._failure_stages[item_id]
        hits = r.hits or []
        stage = self._failure_stages[item_id] = failure_stage(
            recalled=None if row.get("rr") is None else row.get("first_gold_rank") is not None,
            abstention=case.abstention,
            gold=r.item.answer,
            excerpts=[h.text for h in hits],
            raw=[records[h.key].text for h in hits if h.key in records],
        )
        return stage

