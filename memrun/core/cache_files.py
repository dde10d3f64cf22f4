"""memrun's SQLite caches across processes and machines: where they may live, and merging them.

Both caches (the call cache ``calls.sqlite``, :mod:`memrun.llm.cache`; the embedding cache,
:mod:`memrun.arms.embed_cache`) are SQLite files in WAL mode: safe for several processes
on one machine, each commit atomic. SQLite's locking is *not* reliable on network
filesystems (https://www.sqlite.org/faq.html#q5), where most SLURM home folders live:
:func:`network_filesystem` tells, and the caches warn. On a cluster give each shard a
cache on node-local disk (``cache_dir=/tmp/memrun-cache``) and merge them afterwards with
``memrun cache merge SRC... DEST`` (:func:`merge_caches`: insert-or-ignore by key, so a
call or vector already in DEST is kept as it is).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from memrun.errors import MemrunError

NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smbfs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "fuse.sshfs",
    "fuse.glusterfs", "fuse.cephfs", "9p", "afs", "panfs", "pvfs2", "orangefs",
})
"""Filesystem types whose POSIX locks SQLite cannot trust."""

TABLES = {"calls.sqlite": ("replies", "key"), "embeddings.sqlite": ("vectors", "model, sha")}
"""Cache file -> (table, primary key) that :func:`merge_caches` copies."""


def network_filesystem(path: Path, mounts: str = "/proc/mounts") -> str | None:
    """The filesystem type of ``path`` when it is a network filesystem, else None.

    Reads the mount table (Linux ``/proc/mounts``); the longest mount point that contains
    ``path`` decides. None when the table cannot be read (not Linux).
    """
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind if kind in NETWORK_FILESYSTEMS else None


def network_warning(folder: Path, what: str) -> str | None:
    """A warning line when ``folder`` (a cache folder) is on a network filesystem, else None."""
    kind = network_filesystem(folder)
    if kind is None:
        return None
    return (f"{what} {folder} is on a network filesystem ({kind}), where SQLite's locking is unreliable: "
            "with several processes writing, give each its own cache on node-local disk (cache_dir=/tmp/...) "
            "and merge them afterwards with 'memrun cache merge SRC... DEST' (docs/scale.md)")


def merge_caches(sources: Sequence[Path], dest: Path) -> dict[str, tuple[int, int]]:
    """Copy every entry of the caches in ``sources`` (cache folders) into ``dest`` (a folder).

    Insert-or-ignore by primary key: an entry DEST already has is kept. Returns, per cache
    file, (entries added, entries read). Raises MemrunError for a source that is not a
    memrun cache folder or a file that is not a memrun cache.
    """
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemrunError(f"cannot create the cache folder {dest} ({exc.strerror or exc})") from exc
    found = {name: [s / name for s in sources if (s / name).is_file()] for name in TABLES}
    if not any(found.values()):
        raise MemrunError(f"no memrun cache in {', '.join(map(str, sources))} "
                          f"(expected {' or '.join(TABLES)} in each folder)")
    counts: dict[str, tuple[int, int]] = {}
    for name, files in found.items():
        if not files:
            continue
        table, _ = TABLES[name]
        try:
            counts[name] = _merge_one(files, dest / name, table)
        except sqlite3.Error as exc:  # a damaged or unwritable destination
            raise MemrunError(f"cannot write the cache {dest / name} ({exc}); is it a memrun cache on a "
                              "writable disk?") from exc
    return counts


def _merge_one(files: list[Path], target: Path, table: str) -> tuple[int, int]:
    """Insert-or-ignore every row of ``table`` in ``files`` into ``target``: (added, read).

    Raises MemrunError naming a source that is not a memrun cache; sqlite3.Error for the target.
    """
    if not target.exists():  # created with the first source's schema
        _create_like(files[0], target, table)
    added = read = 0
    db = sqlite3.connect(target, timeout=60.0, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        for path in files:
            try:
                db.execute("ATTACH DATABASE ? AS src", (str(path),))
                read += db.execute(f"SELECT count(*) FROM src.{table}").fetchone()[0]
            except sqlite3.Error as exc:  # not a database, or no such table
                raise MemrunError(f"{path}: not a memrun cache ({exc})") from exc
            try:
                # by name: a cache written before a column was added (calls.sqlite's model) merges too
                mine = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
                theirs = [r[1] for r in db.execute(f"PRAGMA src.table_info({table})")]
                for column in (c for c in theirs if c not in mine):
                    db.execute(f"ALTER TABLE main.{table} ADD COLUMN {column}")
                    mine.append(column)
                names = ", ".join(c for c in mine if c in theirs)
                before = db.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0]
                db.execute(f"INSERT OR IGNORE INTO main.{table} ({names}) SELECT {names} FROM src.{table}")
                added += db.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0] - before
            finally:
                db.execute("DETACH DATABASE src")
    finally:
        db.close()
    return added, read


def _create_like(source: Path, dest: Path, table: str) -> None:
    """Create ``dest`` with the schema of ``table`` in ``source``."""
    try:
        src = sqlite3.connect(source)
        try:
            row = src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise MemrunError(f"{source}: not a memrun cache ({exc})") from exc
    if row is None:
        raise MemrunError(f"{source}: not a memrun cache (no table {table})")
    db = sqlite3.connect(dest)
    try:
        db.execute(row[0])
        db.commit()
    finally:
        db.close()
