"""Merge the shards of one run (:mod:`memrun.jobs.shards`) into one ``items.parquet`` and ``summary.json``.

``memrun merge RUN`` reads every shard folder under ``RUN`` (a folder holding a run's
rows whose instrument names a shard), and:

1. checks that the shards measured the same thing: equal comparability fields and equal
   configuration apart from ``shard.index`` (host, times and run ids may differ);
2. picks, for each shard index, its newest complete run (a shard re-run into another
   folder under ``RUN`` replaces a failed one); indices with none are *missing*;
3. checks that no ``(item_id, repeat)`` occurs twice and, when every shard is there, that
   the union of the item ids is exactly the selection the shards recorded (count and
   sha256);
4. writes ``RUN/items.parquet`` (the rows, the merged instrument) and ``RUN/summary.json``
   recomputed from the rows with the run's own code (never by averaging shard
   summaries); counts that are not metrics (arm checks, calls) are summed.

A merge with missing shards is ``partial``: the instrument and summary name the missing
indices and ``memrun compare`` warns. Merging again after re-running them completes it.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memrun.core.instrument import Instrument
from memrun.core.status import MAX_ERROR_SHARE
from memrun.errors import MergeError, RunTableError
from memrun.io.metadata import seal_table
from memrun.io.reader import RunTable, read_run, read_summary, repeated_rows
from memrun.io.writer import ITEMS_FILE, PARTS_DIR, SHA256_KEY, SUMMARY_FILE, file_sha256
from memrun.jobs.shards import items_digest, owns_no_history
from memrun.metrics.run_level import summarize_rows

PARTIAL = "partial"


@dataclass
class MergeResult:
    """What a merge wrote: ``status`` complete | partial, the shard ``count``, the indices
    ``merged`` and ``missing``, ``items`` per merged index, the rows written and the
    merge's wall time in seconds."""

    run_dir: Path
    status: str
    count: int
    merged: list[int]
    missing: list[int]
    items: dict[int, int] = field(default_factory=dict)
    n_rows: int = 0
    seconds: float = 0.0
    chosen: dict[int, Path] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)  # index -> complete copies found, when > 1


def _shard_facts(instrument: Instrument) -> dict[str, Any]:
    """The shard facts (count, index, ...) of a shard's instrument; MergeError for a run that is no shard."""
    if instrument.shard is None:
        raise MergeError(f"the run {instrument.run_id} is not a shard (no shard facts in its instrument)")
    return instrument.shard


def _shard_runs(run_dir: Path) -> list[RunTable]:
    """Every run under ``run_dir`` (one level down) whose instrument names a shard."""
    runs = []
    for folder in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        if not ((folder / ITEMS_FILE).is_file() or (folder / PARTS_DIR).is_dir()):
            continue
        try:
            run = read_run(folder)
        except RunTableError as exc:
            raise MergeError(f"{folder}: {exc}") from exc
        if run.instrument.shard and int(run.instrument.shard.get("count", 1)) > 1:
            runs.append(run)
    return runs


def _same_run(runs: list[RunTable]) -> None:
    """MergeError naming the first shard that measured something else than the first."""
    first = runs[0]
    for run in runs[1:]:
        changed = [d.field for d in first.instrument.diff(run.instrument)]
        changed += [k for k, _, _ in first.instrument.configuration_diff(run.instrument) if k != "shard.index"]
        if _shard_facts(first.instrument)["count"] != _shard_facts(run.instrument)["count"]:
            changed.append("shard.count")
        if changed:
            raise MergeError(f"{run.path} is not a shard of the same run as {first.path}: "
                             f"{', '.join(sorted(set(changed)))} differ(s); merge shards of one configuration")


def _pick(runs: list[RunTable], count: int) -> tuple[dict[int, RunTable], list[int]]:
    """The newest complete run of each shard index, and the indices without one."""
    chosen: dict[int, RunTable] = {}
    for run in runs:
        index = int(_shard_facts(run.instrument)["index"])
        if run.complete and run.instrument.status == "complete":
            best = chosen.get(index)
            if best is None or (run.instrument.finished_at or "") > (best.instrument.finished_at or ""):
                chosen[index] = run
    return dict(sorted(chosen.items())), [i for i in range(count) if i not in chosen]


def _check_rows(table: pa.Table, chosen: dict[int, RunTable], missing: list[int]) -> None:
    """No (item_id, repeat) twice; with every shard there, exactly the recorded selection."""
    twice = repeated_rows(table)
    if twice:
        n, first = twice
        raise MergeError(f"{n} (item_id, repeat) pair(s) occur in more than one shard, first "
                         f"({first['item_id']!r}, {first['repeat']}); were two layouts merged together?")
    facts = _shard_facts(next(iter(chosen.values())).instrument)
    if missing or "items_sha256" not in facts:
        return
    count, digest = items_digest(pc.unique(table.column("item_id")).to_pylist())
    if (count, digest) != (facts["items_total"], facts["items_sha256"]):
        raise MergeError(f"the shards hold {count} distinct items but the run selected {facts['items_total']} "
                         "(or other ones): a shard ran another selection")


def _summed(runs: list[RunTable], key: str) -> dict[str, Any]:
    """A summary block of counts (arm checks, calls) summed over the shards' summaries."""
    total: dict[str, Any] = {}
    for run in runs:
        folder = run.path.parent if run.path.is_file() else run.path
        block = (read_summary(folder) or {}).get(key) or {}
        for name, value in block.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total


def merge(run_dir: Path) -> MergeResult:
    """Merge the shards under ``run_dir`` (module docstring); returns what was written.

    Raises MergeError when there is no shard, the shards differ in what they measured,
    no shard completed, a row occurs twice, or the union of items is not the selection.
    """
    started = time.perf_counter()
    runs = _shard_runs(run_dir)
    if not runs:
        raise MergeError(f"{run_dir}: no shard here (expected folders of runs made with shard.count > 1, "
                         "e.g. outputs/multirun/<time>/shard-0-of-4)")
    _same_run(runs)
    count = int(_shard_facts(runs[0].instrument)["count"])
    chosen, missing = _pick(runs, count)
    if not chosen:
        raise MergeError(f"{run_dir}: none of the {count} shards completed; re-run them, then merge")
    table = pa.concat_tables([r.table.replace_schema_metadata(None) for r in chosen.values()],
                             promote_options="default")
    _check_rows(table, chosen, missing)
    instrument = _merged_instrument([r.instrument for r in chosen.values()], count, missing, table)
    table = seal_table(table, instrument)
    target = run_dir / ITEMS_FILE
    tmp = target.with_suffix(".tmp")
    pq.write_table(table, tmp, write_page_checksum=True)
    digest = file_sha256(tmp)
    tmp.replace(target)
    summary = summarize_rows(
        table.to_pylist(), axis=str(instrument.axis), ks=instrument.ks, categories=instrument.categories,
        comparable_categories=instrument.comparable_categories, task_averaged=instrument.task_averaged,
        headline=instrument.config.get("denominator"), unmeasurable=instrument.retrieval_not_measurable,
        max_error_share=float(instrument.config.get("max_error_share", MAX_ERROR_SHARE)), top_k=instrument.top_k,
    )
    items = {i: len(set(r.table.column("item_id").to_pylist())) for i, r in chosen.items()}
    summary.update(
        run_id=instrument.run_id, status=instrument.status, benchmark=instrument.benchmark, arm=instrument.arm,
        axis=instrument.axis, slice=instrument.slice, corrections_sha256=instrument.corrections_sha256,
        load_counts=instrument.load_counts, arm_checks=_summed(list(chosen.values()), "arm_checks"),
        warnings=instrument.warnings, shards={"count": count, "merged": list(chosen), "missing": missing,
                                              "items": {str(i): n for i, n in items.items()}},
        **{SHA256_KEY: digest},
    )
    if instrument.axis == "accuracy":
        summary.update(calls=_summed(list(chosen.values()), "calls"), repeats=instrument.repeats,
                       fake_providers=instrument.fake_providers)
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    copies = {i: n for i, n in _complete_copies(runs).items() if n > 1}
    return MergeResult(run_dir, instrument.status, count, list(chosen), missing, items, table.num_rows,
                       time.perf_counter() - started, {i: r.path for i, r in chosen.items()}, copies)


def _complete_copies(runs: list[RunTable]) -> dict[int, int]:
    """Shard index -> how many complete runs of it were found."""
    counts: dict[int, int] = {}
    for run in runs:
        if run.complete and run.instrument.status == "complete":
            index = int(_shard_facts(run.instrument)["index"])
            counts[index] = counts.get(index, 0) + 1
    return counts


def _merged_instrument(parts: list[Instrument], count: int, missing: list[int], table: pa.Table) -> Instrument:
    first = parts[0]
    empty = {owns_no_history(count, int(_shard_facts(p)["index"]), str(p.benchmark)) for p in parts}
    warnings = list(dict.fromkeys(w for p in parts for w in p.warnings if w not in empty))  # the merge is whole
    if missing:
        warnings.append(f"partial: shard(s) {', '.join(map(str, missing))} of {count} are missing or did not "
                        "complete; re-run them and merge again")
    unmeasurable = next((p.retrieval_not_measurable for p in parts if p.retrieval_not_measurable), None)
    stamp = datetime.now()
    return replace(
        first,
        run_id=f"{first.benchmark}-{first.arm}-{stamp:%Y%m%d-%H%M%S}-merged-{uuid.uuid4().hex[:6]}",
        status=PARTIAL if missing else "complete",
        shard={"count": count, "merged": [int(_shard_facts(p)["index"]) for p in parts], "missing": missing,
               "assignment": _shard_facts(first).get("assignment")},
        n_rows=table.num_rows,
        n_errors=sum(p.n_errors for p in parts),
        n_items=len(pc.unique(table.column("item_id"))),
        started_at=min((p.started_at for p in parts if p.started_at), default=None),
        finished_at=max((p.finished_at for p in parts if p.finished_at), default=None),
        warnings=warnings,
        retrieval_not_measurable=unmeasurable,
        config={**first.config, "shard": {"count": count, "index": None}},
    )
