"""The run folders near a new run that may hold an unfinished run, found without reading every past run.

A new run looks for unfinished runs of its configuration (:func:`memrun.jobs.launch.stale_runs`)
in the folders two levels above it: ``<root>/*/*`` where ``root`` is its folder's grandparent
(the run folders beside it and, for a sweep job, the jobs of the sweeps beside its sweep). A
folder is a candidate when it holds ``items.parts/`` (a run killed before its table was
written) or a ``summary.json`` that says ``interrupted`` (Ctrl-C, SIGTERM).

Reading every past run's summary at every start made start-up grow with the history (~30 ms
at 500 runs). Most past runs are *finished*: a table, a summary that is not ``interrupted``
and no parts. Nothing memrun does turns
a finished run back into a candidate, so :func:`candidates` notes each finished folder it
meets in a per-user cache (one file per ``root``, :func:`memrun.core.paths.user_cache`),
keyed by the folder's name, inode and modification time: a later start skips it after one
``stat``, and a folder whose entries changed (``resumed.json`` removed, parts added) or that
was replaced by a new folder of the same name is examined again. The cache only spares
reads: a candidate is never taken from it, and a missing, unreadable or unwritable cache
means examining every folder, as before. The cache keeps the :data:`MAX_ROOTS` roots most
recently written (temp folders come and go).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.core.paths import user_cache
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.io import writer
else:
    writer = lazy("memrun.io.writer")

CACHE_DIR = ("finished-runs",)
"""Under :func:`memrun.core.paths.user_cache`: one JSON file per searched root folder."""
MAX_ROOTS = 256
"""Root folders whose cache is kept: writing one removes the least recently written beyond
this many (roots that are gone, a test's or a bench's temp folders, would otherwise pile up)."""


def candidates(out_dir: Path) -> list[Path]:
    """The folders near ``out_dir`` that may hold an unfinished run, without duplicates: those
    beside ``out_dir`` first (parts, then interrupted summaries), then those in the folders
    beside its parent, in directory order. ``out_dir`` itself is included when it qualifies.
    A folder reached through more than one path (a link beside the runs: pytest's
    ``<name>current``, a user's ``latest``) is listed once, spelled without the link when
    it was also found so."""
    root = out_dir.parent.parent
    seen = _read_cache(root)
    finished: dict[str, list[int]] = {}
    beside: tuple[list[Path], list[Path]] = ([], [])
    others: tuple[list[Path], list[Path]] = ([], [])
    for parent, entry in _run_folders(root):
        key = f"{parent.name}/{entry.name}"
        try:
            stat = entry.stat()
        except OSError:
            continue
        stamp = [stat.st_ino, stat.st_mtime_ns]
        if seen.get(key) == stamp:
            finished[key] = stamp
            continue
        folder = Path(entry.path)
        parts, interrupted = (folder / writer.PARTS_DIR).exists(), _interrupted(folder / writer.SUMMARY_FILE)
        lists = beside if parent == out_dir.parent else others
        if parts:
            lists[0].append(folder)
        if interrupted:
            lists[1].append(folder)
        if not parts and not interrupted and _finished(folder):
            finished[key] = stamp
    if finished != seen:
        _write_cache(root, finished)
    return _once([*beside[0], *beside[1], *others[0], *others[1]])


def _once(folders: list[Path]) -> list[Path]:
    """``folders`` with each folder once by its real path, in the order first found; a
    spelling without a link replaces one through a link."""
    found: dict[str, Path] = {}
    for folder in folders:
        real = os.path.realpath(folder)
        if real not in found or (os.path.abspath(found[real]) != real and os.path.abspath(folder) == real):
            found[real] = folder
    return list(found.values())


def _run_folders(root: Path) -> Iterator[tuple[Path, os.DirEntry[str]]]:
    """``(parent, entry)`` for every folder ``root/*/*``, in directory order (the order of
    ``root.glob("*/*")``); folders that cannot be listed are left out."""
    try:
        parents = [Path(e.path) for e in os.scandir(root) if e.is_dir()]
    except OSError:
        return
    for parent in parents:
        try:
            entries = [e for e in os.scandir(parent) if e.is_dir()]
        except OSError:
            continue
        for entry in entries:
            yield parent, entry


def _interrupted(summary: Path) -> bool:
    """Whether a run's ``summary.json`` says it was interrupted (missing or unreadable: no).
    A summary without the word is not parsed."""
    try:
        data = summary.read_bytes()
        return b'"interrupted"' in data and json.loads(data).get("status") == "interrupted"
    except (OSError, ValueError, AttributeError):
        return False


def _finished(folder: Path) -> bool:
    """A run that can never become a candidate: it has its table and its summary (the caller
    checked that it has no parts and that the summary is not ``interrupted``)."""
    return (folder / writer.ITEMS_FILE).is_file() and (folder / writer.SUMMARY_FILE).is_file()


def _cache_file(root: Path) -> Path:
    digest = hashlib.sha256(str(root.absolute()).encode()).hexdigest()[:24]
    return user_cache(*CACHE_DIR, f"{digest}.json")


def _read_cache(root: Path) -> dict[str, list[int]]:
    """The finished folders noted under ``root``: ``"<parent>/<name>": [inode, mtime_ns]``
    (empty when there is no cache or it cannot be read)."""
    try:
        data = json.loads(_cache_file(root).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("root") != str(root.absolute()) or not isinstance(data.get("finished"), dict):
        return {}
    return data["finished"]


def _write_cache(root: Path, finished: dict[str, list[int]]) -> None:
    """Replace ``root``'s cache with ``finished`` (atomically; a failure only costs reads later)."""
    path = _cache_file(root)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"root": str(root.absolute()), "finished": finished}))
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return
    _prune(path.parent)


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ROOTS` most recently written caches in ``folder`` (a cache removed
    costs only reads at a later start under its root)."""
    try:
        files = [(e.stat().st_mtime_ns, e.path) for e in os.scandir(folder) if e.name.endswith(".json")]
    except OSError:
        return
    if len(files) <= MAX_ROOTS:
        return
    for _, path in sorted(files, reverse=True)[MAX_ROOTS:]:
        try:
            os.unlink(path)
        except OSError:
            pass  # removed meanwhile by another run's prune
