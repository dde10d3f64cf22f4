"""Resuming a run that did not finish: its rows are kept, only the rest runs.

A run stopped by Ctrl-C or SIGTERM (status ``interrupted``) or killed (its rows only in
``items.parts/``) leaves every item that had finished as a row: on the retrieval axis every
answered search, on the accuracy axis every judged item x repeat. A new run of the same
configuration beside it (:func:`memrun.jobs.launch.stale_runs`) takes those rows over
(``resume=true``, the default) when they were made under the same instrument
(:func:`instrument_changes`: every comparability field, the dataset file's sha256 among them,
and where the LLM calls went, :data:`RESUME_FIELDS`; a config names ``$OPENAI_BASE_URL``, not
its value, so the configuration check alone cannot see another endpoint):

- the rows are copied into the new run (under its run id) and counted as its own, their
  hits observed by the arm checks (:class:`memrun.pipeline.checks.HitChecks`) as if searched now;
- a row whose item failed (its ``error`` set: a failed call, a search that raised) is not
  kept: its item x repeat runs again, as a re-run retries a failed call (the call cache
  stores only successes);
- a history all of whose items have rows is not ingested again; one with some items left
  is ingested again (its namespace was erased when the run stopped) and only those items
  are searched; on the accuracy axis only the missing repeats of an item are answered.

So a stop costs the calls in flight at the signal plus the ingest of the histories that
were open (``bench/bench_stop_cost.py`` measures it).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrun.core.instrument import Instrument
from memrun.io.reader import read_run
from memrun.io.writer import RESUMED_FILE  # written into a run's folder once another run took its rows over: not resumed again
from memrun.pipeline.checks import HitChecks
from memrun.pipeline.one_history import history_keys
from memrun.records import Dataset, Group

RESUME_FIELDS = ("llm_endpoints", "shard")
"""Instrument fields, besides the comparability ones, that rows taken over must share with
the run taking them: the endpoints the LLM calls went to (the same model name at another URL
may be another model; the URL often comes from the environment, which the config does not
record) and the shard (another shard's rows are other items)."""


def instrument_changes(earlier: Instrument, now: Instrument) -> list[str]:
    """``"<field>: <earlier> then, <now> now"`` for every comparability field and every
    :data:`RESUME_FIELDS` field on which ``earlier`` (a run's rows) and ``now`` differ; a
    dict field says each key that differs (``llm_endpoints.reader: ...``). Empty: the rows
    may be taken over."""
    changes = [f"{d.field}: {d.a} then, {d.b} now" for d in earlier.diff(now)]
    for name in RESUME_FIELDS:
        then, here = getattr(earlier, name), getattr(now, name)
        if then == here:
            continue
        if isinstance(then, dict) and isinstance(here, dict):
            changes += [f"{name}.{k}: {then.get(k)} then, {here.get(k)} now"
                        for k in sorted(set(then) | set(here)) if then.get(k) != here.get(k)]
        else:
            changes.append(f"{name}: {then} then, {here} now")
    return changes


def mark(folder: Path, by: Path) -> None:
    """Record in ``folder`` that the run in ``by`` took its rows over. A folder removed since
    its rows were read is left alone: its rows are already this run's, nothing is left to mark."""
    try:
        (folder / RESUMED_FILE).write_text(json.dumps({"resumed_by": str(by)}) + "\n")
    except FileNotFoundError:
        pass


def taken_over_by(folder: Path) -> str | None:
    """The folder of the run that took the rows of the unfinished run in ``folder`` over
    (:func:`mark`), or None when none did (or the marker cannot be read)."""
    try:
        by = json.loads((folder / RESUMED_FILE).read_text(encoding="utf-8")).get("resumed_by")
    except (OSError, ValueError, AttributeError):
        return None
    return str(by) if by else None


@dataclass
class Resumed:
    """The rows an unfinished run left, by item: ``rows`` (as written, those without an
    error), ``done`` (the ``(item_id, repeat)`` pairs they cover), ``failed`` (its rows with
    an error, left out: run again), ``folder`` and the run's ``instrument``."""

    folder: Path
    instrument: Instrument
    rows: list[dict[str, Any]] = field(default_factory=list)
    done: set[tuple[str, int]] = field(default_factory=set)
    failed: int = 0

    @classmethod
    def read(cls, folder: Path) -> Resumed:
        """The rows of the run in ``folder`` (its ``items.parquet``, else its parts). Raises
        RunTableError when they cannot be read."""
        table = read_run(folder)
        every = table.table.to_pylist()
        rows = [r for r in every if r.get("error") is None]
        return cls(folder, table.instrument, rows, {(str(r["item_id"]), int(r["repeat"])) for r in rows},
                   len(every) - len(rows))

    def remaining(self, dataset: Dataset, repeats: int, checks: HitChecks) -> Dataset:
        """``dataset`` with only the items some repeat of which has no row (groups left with
        none are dropped: not ingested again). The rows' hits are observed by ``checks``
        as the groups go by (once per item, with its history's keys)."""
        by_item: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            by_item.setdefault(str(row["item_id"]), row)
        groups = _remaining(dataset.groups, by_item, self.done, repeats, checks)
        return dataclasses.replace(dataset, groups=list(groups) if isinstance(dataset.groups, list) else groups)


def _remaining(groups: Iterable[Group], by_item: dict[str, dict[str, Any]], done: set[tuple[str, int]],
               repeats: int, checks: HitChecks) -> Iterator[Group]:
    for group in groups:
        keys, n_records = None, len(group.records)
        left = []
        for item in group.items:
            if any((item.item_id, k) not in done for k in range(repeats)):
                left.append(item)  # retrieved again, and observed then
                continue
            row = by_item[item.item_id]
            keys = keys if keys is not None else history_keys(group)
            hits = None if row.get("error") or row.get("retrieved_keys") is None else list(row["retrieved_keys"])
            checks.observe_keys(hits, keys, n_records, answered=row.get("answer_source") == "arm",
                                texts=None if hits is None else row.get("retrieved_texts"))
        if left:
            yield dataclasses.replace(group, items=left)
