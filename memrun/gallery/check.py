"""Running gallery entries and judging them: PASS, FAIL, NOT-REPRODUCIBLE, NEEDS-DATA, ERROR.

An entry of kind ``run`` is a memrun run (``python -m memrun <overrides>``, the command a
user types, into ``<out>/<name>``); its values are read back from the run's rows
(:func:`run_value`), so they are what ``summary.json`` reports, and with ``credit_absent``
the items without gold are counted 1 as the peer counted them (the count is shown). A
value passes when it lies within its tolerance of the published one (``rounding: ceil``:
when it rounds up to it). An entry passes when every value it claims passes; a value
marked ``not_reproducible`` is listed with its reason and never passes.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.errors import DataError
from memrun.gallery.entries import FILES, Entry, Value
from memrun.gallery.per_item import agreement, read_per_item
from memrun.gallery.statistics import STATISTICS
from memrun.lazy import lazy
from memrun.metrics.retrieval import item_column_for

if TYPE_CHECKING:
    from pyarrow import parquet as pq
else:
    pq = lazy("pyarrow.parquet")

PASS, FAIL, NOT_REPRODUCIBLE, NEEDS_DATA, ERROR = "PASS", "FAIL", "NOT-REPRODUCIBLE", "NEEDS-DATA", "ERROR"


@dataclass
class ValueResult:
    """One value: published, memrun's (None: not measured), the status and what to say beside it."""

    value: Value
    memrun: float | None
    status: str
    note: str = ""


@dataclass
class EntryResult:
    """One entry's outcome: status, reason (one line), its values and per-item agreement."""

    entry: Entry
    status: str
    reason: str = ""
    values: list[ValueResult] = field(default_factory=list)
    per_item: dict[str, Any] | None = None
    run_dir: str | None = None


def missing(entry: Entry, data_dir: Path | None) -> str | None:
    """What the entry needs that is not here (one line: data files, modules, the publisher's
    original per-item file), or None."""
    needs = []
    for need in entry.data:
        if data_dir is None or not (data_dir / need["file"]).exists():
            sha = f" (sha256 {need['sha256']})" if need.get("sha256") else ""
            what = f" ({need['what']})" if need.get("what") else ""
            needs.append(f"{need['file']}{sha}{what} under " + (str(data_dir) if data_dir else "$MEMRUN_DATA_DIR (unset)"))
    for module in entry.needs:
        if importlib.util.find_spec(module) is None:
            needs.append(f"the Python module {module} (pip install 'memrun[local]')")
    if entry.per_item is not None and entry.per_item.file is None:
        spec = entry.per_item
        pins = [f"sha256 {spec.sha256}"] * bool(spec.sha256) + [f"git blob {spec.blob}"] * bool(spec.blob)
        needs.append(f"the original file {spec.name} ({', '.join(pins)})")
    return "needs " + "; ".join(needs) if needs else None


def judge(value: Value, memrun: float | None, note: str = "") -> ValueResult:
    """The status of one value (see the module docstring)."""
    if value.not_reproducible:
        return ValueResult(value, memrun, NOT_REPRODUCIBLE, value.not_reproducible)
    if memrun is None:
        return ValueResult(value, None, FAIL, note or "not measured")
    if value.rounding == "ceil":
        ok = math.ceil(round(memrun, 9)) == value.published
    else:
        ok = abs(memrun - value.published) <= value.tolerance + 1e-12
    return ValueResult(value, memrun, PASS if ok else FAIL, note)


def run_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The first repeat's rows of a run folder (``items.parquet``)."""
    return [r for r in pq.read_table(run_dir / "items.parquet").to_pylist() if r.get("repeat", 0) == 0]


def run_value(rows: list[dict[str, Any]], metric: str, credit_absent: bool) -> tuple[float | None, str]:
    """The mean of ``metric`` over the rows that have it (errors left out), and a note; with
    ``credit_absent``, rows without a value (no gold) count 1, and the note says how many."""
    column = item_column_for(metric)
    values = [float(r[column]) for r in rows if r.get("error") is None and r.get(column) is not None]
    absent = sum(1 for r in rows if r.get("error") is None and r.get(column) is None) if credit_absent else 0
    n = len(values) + absent
    if not n:
        return None, "no item scored"
    note = f"n={n}" + (f", {absent} without gold counted 1 (the peer's convention)" if absent else "")
    return (math.fsum(values) + absent) / n, note


def per_item_agreement(entry: Entry, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The publisher's per-item file against the run's rows (:func:`memrun.gallery.per_item.agreement`)."""
    spec = entry.per_item
    assert spec is not None and spec.file is not None
    published = read_per_item(FILES / spec.file, spec.sha256, spec.format, spec.k, spec.blob)
    column = item_column_for(spec.column)
    ours: dict[str, tuple[float | None, Any]] = {}
    for r in rows:
        value = r.get(column)
        if value is None and entry.credit_absent and r.get("error") is None:
            value = 1.0
        ours[str(r["item_id"])] = (None if value is None else float(value), (r.get("retrieved_keys") or [])[: spec.k])
    return agreement(published, ours)


def execute_entry(entry: Entry, data_dir: Path | None, out: Path, reuse: bool = False) -> EntryResult:
    """Run ``entry`` (or reuse a finished run of it in ``out/<name>``) and judge its values."""
    if entry.kind == "not_reproducible":
        return EntryResult(entry, NOT_REPRODUCIBLE, entry.reason or "")
    why = missing(entry, data_dir)
    if why:
        return EntryResult(entry, NEEDS_DATA, why)
    assert data_dir is not None or not entry.data
    if entry.kind == "statistics":
        stats = STATISTICS[str(entry.statistic)](data_dir or Path("."))
        results = [judge(v, stats.get(v.metric)) for v in entry.values]
        return EntryResult(entry, _overall(results), values=results)
    run_dir = out / entry.name
    if not (reuse and (run_dir / "summary.json").is_file()):
        failure = _memrun(entry, data_dir, run_dir)
        if failure:
            return EntryResult(entry, ERROR, failure, run_dir=str(run_dir))
    rows = run_rows(run_dir)
    results = [judge(v, *run_value(rows, v.metric, entry.credit_absent)) for v in entry.values]
    result = EntryResult(entry, _overall(results), values=results, run_dir=str(run_dir))
    if entry.per_item is not None:
        try:
            result.per_item = per_item_agreement(entry, rows)
        except DataError as exc:
            result.per_item = {"error": str(exc)}
    return result


def _overall(results: list[ValueResult]) -> str:
    claimed = [r for r in results if r.status != NOT_REPRODUCIBLE]
    if not claimed:
        return NOT_REPRODUCIBLE
    return PASS if all(r.status == PASS for r in claimed) else FAIL


def _memrun(entry: Entry, data_dir: Path | None, run_dir: Path) -> str | None:
    """Run memrun on the entry's overrides as a user would; the last line of its output when it fails."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if data_dir is not None:
        env["MEMRUN_DATA_DIR"] = str(data_dir)
    # {files}: the files shipped with the gallery; {data}: the data folder
    overrides = [o.replace("{files}", str(FILES)).replace("{data}", str(data_dir)) for o in entry.overrides]
    command = [sys.executable, "-m", "memrun", *overrides, "progress=false", f"hydra.run.dir={run_dir}"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    (run_dir.parent / f"{entry.name}.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0 or not (run_dir / "items.parquet").is_file():
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        return f"memrun exited {done.returncode}: {lines[-1] if lines else 'no output'}"
    return None
