"""The runs table of ``memrun view``: one row per run folder under a directory, read as it is.

A run folder is one holding ``items.parquet`` or ``items.parts/``. Each row takes the
instrument from the Parquet footer's key-value metadata, its seal checked
(:func:`memrun.io.reader.peek_instrument`: no rows read, no column metadata decoded)
and the figures from ``summary.json`` (:func:`memrun.report.model.headline`, the
headline's 95% interval from ``summary["intervals"]``), the same
numbers ``memrun sweep`` and the run page show. Rows are cached per folder by the
files' modification times and sizes, so a reload lists new runs and re-reads only
changed ones. A run still writing (its live file, :mod:`memrun.io.live`, names a process
that runs) is ``running``, with its ``progress`` (rows done of total, elapsed, calls in
flight); one that stopped without finishing is ``interrupted``, or ``resumed`` once a later
run of the same configuration took its rows over (``resumed_by``: that run's folder,
relative to the served folder when inside it: :func:`memrun.pipeline.resume.taken_over_by`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.errors import MemrunError
from memrun.io.live import LIVE_FILE, progress_text, read_live
from memrun.io.writer import ITEMS_FILE, PARTS_DIR, RESUMED_FILE, SUMMARY_FILE
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.io import reader as io_reader
    from memrun.pipeline import resume as pipeline_resume
    from memrun.report import model as report_model
else:
    io_reader = lazy("memrun.io.reader")
    pipeline_resume = lazy("memrun.pipeline.resume")  # an unfinished run only
    report_model = lazy("memrun.report.model")

INSTRUMENT_COLUMNS = ("split", "slice", "search_mode", "embedder", "reader_model", "judge_model", "judge2_model",
                      "denominator", "server_build", "index_revision", "repeats", "memrun_version", "run_id")
"""Instrument fields offered as optional columns of the runs table."""

_SKIP = {".hydra", ".memrun", PARTS_DIR, "__pycache__", ".git"}


def run_folders(root: Path) -> Iterator[Path]:
    """Every run folder under ``root`` (``root`` itself included), depth first, sorted: one
    holding rows, or a live file (a run started that has not written a part yet).
    Run folders are not searched further (a run holds no runs)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    names = {e.name for e in entries}
    if ITEMS_FILE in names or PARTS_DIR in names or LIVE_FILE in names:
        yield root
        return
    for e in entries:
        if e.is_dir(follow_symlinks=False) and e.name not in _SKIP:
            yield from run_folders(Path(e.path))


def link_out(folder: Path, root: Path) -> str | None:
    """The first of a run's files (rows, parts, summary, live file) that resolves outside
    ``root`` (a symlink pointing out of the runs folder), as ``folder``-relative text; None
    when every one stays inside. The view never reads such a file."""
    names = [ITEMS_FILE, SUMMARY_FILE, PARTS_DIR, LIVE_FILE]
    parts = folder / PARTS_DIR
    if parts.is_dir():
        names += [f"{PARTS_DIR}/{p.name}" for p in sorted(parts.iterdir())]
    for name in names:
        path = folder / name
        if path.is_symlink() or path.exists():
            target = path.resolve()
            if target != root and root not in target.parents:
                return name
    return None


def stamp(folder: Path) -> tuple[int, ...]:
    """Modification times (ns) and sizes of a run's rows, summary, parts folder and live
    file (0, 0 when absent): a row is re-read when any of them changed."""
    out: list[int] = []
    base = str(folder)
    for name in (ITEMS_FILE, SUMMARY_FILE, PARTS_DIR, LIVE_FILE, RESUMED_FILE):
        try:
            st = os.stat(os.path.join(base, name))
            out += (st.st_mtime_ns, st.st_size)
        except OSError:
            out += (0, 0)
    return tuple(out)


def run_row(folder: Path, root: Path) -> dict[str, Any]:
    """One row of the runs table for ``folder`` (see the module docstring). Fractions for
    the headline and its interval (``mrr`` is a score, not a percentage). A folder whose
    rows cannot be read is listed with status ``unreadable`` and the reason in ``error``."""
    row: dict[str, Any] = {"path": folder.relative_to(root).as_posix() or ".", "error": None, "progress": None}
    if (out := link_out(folder, root.resolve())) is not None:
        return {**row, "status": "unreadable", "error": f"{out} links outside the runs folder; not read",
                "benchmark": None, "arm": None, "axis": None}
    finished = (folder / ITEMS_FILE).is_file()
    live = None if finished else read_live(folder)
    if live is not None and live["running"]:
        row["progress"] = progress_text(live)
    try:
        inst = io_reader.peek_instrument(folder)
    except MemrunError as exc:
        if row["progress"] and live is not None:  # started, no part written yet
            return {**row, "status": "running", **{k: live.get(k) for k in ("benchmark", "arm", "axis")},
                    "items": live.get("done")}
        return {**row, "status": "unreadable", "error": str(exc), "benchmark": None, "arm": None, "axis": None}
    summary = io_reader.read_summary(folder) or {}
    metric, value = report_model.headline(summary)
    low, high = report_model.shown_interval(report_model.headline_interval(summary)) if metric != "mrr" else (None, None)
    status = inst.status if finished else "running" if row["progress"] else "interrupted"
    if status == "interrupted" and (by := pipeline_resume.taken_over_by(folder)) is not None:
        status, row["resumed_by"] = "resumed", _shown(Path(by), root)
    row.update({
        "benchmark": inst.benchmark, "arm": inst.arm, "axis": inst.axis, "status": status,
        "metric": metric, "value": value, "low": low, "high": high,
        "items": summary.get("n_items", inst.n_items), "rows": inst.n_rows,
        "errors": inst.n_errors if (n := report_model.error_count(summary)) is None else n,
        "date": inst.started_at, "commit": (inst.git_commit or "")[:12] or None,
        "fake": bool(inst.fake_providers), "error": inst.error,
    })
    for name in INSTRUMENT_COLUMNS:
        v = getattr(inst, name, None)
        row[name] = None if v in (None, "") else v if isinstance(v, (int, float)) else str(v)
    return row


def _row_or_unreadable(folder: Path, root: Path) -> dict[str, Any]:
    """:func:`run_row`, or an ``unreadable`` row naming what broke when the folder holds files
    memrun did not write as they are (a summary.json edited by hand, ``"overall_all": 5``):
    one such folder is one row saying so, never the whole runs page failing."""
    try:
        return run_row(folder, root)
    except Exception as exc:  # noqa: BLE001 - any damage in one folder: that row, not the page
        return {"path": folder.relative_to(root).as_posix() or ".", "progress": None, "status": "unreadable",
                "error": f"{folder}: its summary.json or instrument holds values memrun did not write "
                         f"({type(exc).__name__}: {exc}); re-run it or restore the files",
                "benchmark": None, "arm": None, "axis": None}


def _shown(folder: Path, root: Path) -> str:
    """``folder`` relative to the served ``root`` when inside it, else as it is."""
    try:
        return folder.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return str(folder)


class RunIndex:
    """The runs under ``root``, re-listed on every :meth:`rows` call, re-read only when a
    folder's files changed (by modification time).

    cache_file: where the rows are kept between sessions (a JSON file in memrun's user
    cache, keyed by the served folder), so a folder of many runs opens at once the next
    time; None keeps them in memory only. Reads of changed runs go on ``threads`` threads
    (Parquet footers are read outside the GIL)."""

    def __init__(self, root: Path, cache_file: Path | None = None, threads: int = 4) -> None:
        self.root = Path(root).resolve()
        self.cache_file = cache_file
        self.threads = threads
        self._cache: dict[str, tuple[list[int], dict[str, Any]]] = self._load()

    def _load(self) -> dict[str, tuple[list[int], dict[str, Any]]]:
        if self.cache_file is None:
            return {}
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
            return {k: (list(v[0]), v[1]) for k, v in data.items()} if isinstance(data, dict) else {}
        except (OSError, ValueError, TypeError, IndexError, KeyError):
            return {}  # a missing or damaged cache is rebuilt

    def _save(self) -> None:
        if self.cache_file is None:
            return
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_file.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(self._cache), encoding="utf-8")
            os.replace(tmp, self.cache_file)
        except OSError:
            pass  # the cache only saves time

    def rows(self) -> list[dict[str, Any]]:
        """Every run's row, newest first (by start time, then path)."""
        found = {str(f): f for f in run_folders(self.root)}
        stamps = {key: list(stamp(f)) for key, f in found.items()}
        stale = [key for key in found if key not in self._cache or self._cache[key][0] != stamps[key]
                 or self._cache[key][1].get("status") == "running"]  # its elapsed time moves; it may have died
        if stale:  # a slice of the runs per thread: one task each, not one per run
            n = max(1, min(self.threads, len(stale)))
            with ThreadPoolExecutor(n) as pool:
                for keys, rows in pool.map(lambda ks: (ks, [_row_or_unreadable(found[k], self.root) for k in ks]),
                                           [stale[i::n] for i in range(n)]):
                    for key, row in zip(keys, rows):
                        self._cache[key] = (stamps[key], row)
        gone = set(self._cache) - set(found)
        for key in gone:
            del self._cache[key]
        if stale or gone:
            self._save()
        out = [self._cache[key][1] for key in found]
        return sorted(out, key=lambda r: (r.get("date") or "", r["path"]), reverse=True)

    def folder(self, rel: str) -> Path:
        """The run folder named by a row's ``path``; MemrunError for a path outside the root
        or not a run folder (the app never opens a file the table did not list)."""
        folder = (self.root / rel).resolve()
        if folder != self.root and self.root not in folder.parents:
            raise MemrunError(f"{rel}: not under {self.root}")
        if not ((folder / ITEMS_FILE).is_file() or (folder / PARTS_DIR).is_dir() or (folder / LIVE_FILE).is_file()):
            raise MemrunError(f"{rel}: not a run folder (no {ITEMS_FILE} or {PARTS_DIR}/)")
        if (out := link_out(folder, self.root)) is not None:
            raise MemrunError(f"{rel}/{out}: a link to a file outside {self.root}; the view serves only what is under it")
        return folder
