"""Read a run back: its per-item table and its instrument."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.core.instrument import METADATA_KEY, Instrument
from memrun.errors import RunTableError
from memrun.io.metadata import LEGACY_WARNING, verify
from memrun.io.writer import ITEMS_FILE, PARTS_DIR, SHA256_KEY, SUMMARY_FILE, file_sha256, skip_pandas_probe
from memrun.lazy import lazy

# pyarrow loads at the first table or schema read: peek_instrument of a sealed footer needs none
# (a run's stale-run check reads its neighbours' instruments before its first request).
if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from memrun.io import footer as io_footer
else:
    pa = lazy("pyarrow")
    pc = lazy("pyarrow.compute")
    pq = lazy("pyarrow.parquet")
    io_footer = lazy("memrun.io.footer")


WHOLE_STATUSES = ("complete", "degraded")
"""The statuses of a run that wrote a row for every item it selected (:meth:`RunTable.unfinished`)."""


@dataclass
class RunTable:
    """A run's rows (``table``) and the :class:`Instrument` that produced them.

    complete: False when read from the parts of a run that did not finish (crash or
    kill); the rows are those that finished.
    """

    path: Path
    table: pa.Table
    instrument: Instrument
    complete: bool

    def unfinished(self) -> list[str]:
        """Why these rows are not the whole run, one phrase per reason, or [] for a whole run:
        it ``did not finish`` (read from its parts), ended otherwise than complete or
        degraded (``ended interrupted``, ``stopped`` by its token budget, ``failed``, a merge
        missing shards: ``ended partial (shards 2 missing)``), or is one shard of a run. A
        degraded run is whole: a row for every item, its errors among them. The one reading
        of it for ``memrun compare`` (which holds its verdict on it), ``memrun failures`` and
        the compare page."""
        reasons = []
        if not self.complete:
            reasons.append("did not finish")
        elif self.instrument.status not in WHOLE_STATUSES:
            missing = (self.instrument.shard or {}).get("missing")
            shards = f" (shards {', '.join(map(str, missing))} missing)" if missing else ""
            reasons.append(f"ended {self.instrument.status}{shards}")
        if self.lone_shard:
            reasons.append(f"is {self.lone_shard} of a run, not the whole run (memrun merge the shards' folder "
                           "for the whole)")
        return reasons

    @property
    def lone_shard(self) -> str | None:
        """``shard I of N`` when these rows are one shard of a sharded run (not a merge of
        them), else None."""
        shard = self.instrument.shard or {}
        if "index" in shard and "merged" not in shard:
            return f"shard {shard['index']} of {shard['count']}"
        return None

    @property
    def folder(self) -> Path:
        """The run's folder: ``path`` when it is one, else the folder holding ``path`` (a
        run read from its ``items.parquet``)."""
        return self.path if self.path.is_dir() else self.path.parent


def read_run(path: str | Path, columns: Sequence[str] | None = None) -> RunTable:
    """Open a run folder or an ``items.parquet`` file.

    A folder without ``items.parquet`` but with ``items.parts/`` (a run killed before
    it finished) is read from its parts. ``columns``: read only these (those the file
    lacks are left out; the caller checks), None for all. Raises RunTableError naming
    the path when there is nothing to read, a file is damaged (truncated, a bad footer,
    unparseable instrument JSON) or is not a memrun table, when it holds an ``(item_id,
    repeat)`` pair on two rows (:func:`repeated_rows`; checked when ``columns`` read both), and for a ``path`` or
    ``columns`` of the wrong type (a str of columns is refused, not read letter by letter).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise RunTableError(f"read_run takes a run folder or items.parquet path (str or Path), not "
                            f"{type(path).__name__} {path!r:.60}")
    if columns is not None and (isinstance(columns, str) or not all(isinstance(c, str) for c in columns)):
        raise RunTableError(f"read_run's columns: a list of column names, e.g. ['item_id'], not "
                            f"{type(columns).__name__} {columns!r:.60}")
    path = Path(path)
    if path.is_dir():
        if (path / ITEMS_FILE).is_file():
            return _read_file(path / ITEMS_FILE, columns)
        parts = sorted((path / PARTS_DIR).glob("part-*.parquet"))
        if parts:
            read = [_read_table(p, columns) for p in parts]
            instruments = [_instrument(schema, p) for p, (_, schema) in zip(parts, read)]  # each part verified
            try:
                table = pa.concat_tables([t for t, _ in read], promote_options="default")
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise RunTableError(f"{path / PARTS_DIR}: the parts do not share one schema ({exc})") from exc
            _check_rows_once(table, path / PARTS_DIR)
            return RunTable(path, table, instruments[-1], complete=False)
        if (path / PARTS_DIR).is_dir() or (path / ".hydra").is_dir():
            raise RunTableError(f"{path}: this run wrote no rows (it stopped before its first rows were saved)")
        jobs = sorted(child.name for child in path.iterdir() if (child / ITEMS_FILE).is_file()
                      or (child / PARTS_DIR).is_dir())
        if jobs:  # a sweep's folder, or a sharded run's before memrun merge
            listed = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more" if len(jobs) > 3 else "")
            raise RunTableError(f"{path}: a folder of runs ({listed}), not one run: give one of them, or when they "
                                f"are the shards of one run, memrun merge {path} first")
        raise RunTableError(f"{path}: no {ITEMS_FILE} and no {PARTS_DIR}/ here; is this a memrun run folder?")
    if path.is_file():
        return _read_file(path, columns)
    raise RunTableError(f"{path}: no such file or folder")


def repeated_rows(table: pa.Table) -> tuple[int, dict[str, Any]] | None:
    """(how many ``(item_id, repeat)`` pairs occur on more than one row, the first such pair
    as ``{"item_id", "repeat"}``), or None when each occurs once, as a run writes them (a
    table without the two columns is not checked). A table joining runs or shards by hand can
    hold a pair twice: its rows would count as more repeats of the item."""
    if not {"item_id", "repeat"} <= set(table.column_names):
        return None
    # compute kernels on integer keys (Table.group_by goes through Acero, which imports
    # pyarrow.dataset; joined strings cost 3x these), Python scalars converted with pandas found
    # absent: memrun view's drill-down and compare never pay pandas' import (seconds of CPU)
    skip_pandas_probe()
    ids = pc.dictionary_encode(table.column("item_id").combine_chunks())
    repeats = pc.cast(table.column("repeat").combine_chunks(), pa.int64())
    keys = pc.add(pc.shift_left(pc.cast(ids.indices, pa.int64()), 32), repeats)  # (item, repeat) as one int
    if pc.count_distinct(keys).as_py() == pc.count(keys).as_py():
        return None
    counts = pc.value_counts(keys)
    twice = counts.filter(pc.and_(pc.greater(counts.field("counts"), 1), pc.is_valid(counts.field("values"))))
    first = twice.field("values")[0].as_py()
    return len(twice), {"item_id": ids.dictionary[first >> 32].as_py(), "repeat": first & 0xFFFFFFFF}


def _unreadable(path: Path, exc: Exception) -> RunTableError:
    """One line for a file Arrow cannot read (its messages may span lines)."""
    reason = " ".join(str(exc).split())
    return RunTableError(f"{path}: not a readable Parquet file, damaged or truncated? ({reason})")


def _instrument_file(path: Path) -> Path:
    """The file holding the instrument of ``path``: a run folder's ``items.parquet``, else
    its last part, else ``path`` itself (a file, or a folder with nothing to read)."""
    if path.is_dir():
        parts = sorted((path / PARTS_DIR).glob("part-*.parquet"))
        return path / ITEMS_FILE if (path / ITEMS_FILE).is_file() else (parts[-1] if parts else path)
    return path


def read_instrument(path: str | Path) -> Instrument:
    """The :class:`Instrument` of a run folder or ``items.parquet``, from the Parquet footer
    alone: no rows are read and no sha256 is computed (:func:`read_run` checks those).

    Raises RunTableError as :func:`read_run` does for a path with nothing to read or a
    file that is damaged or not a memrun table.
    """
    path = _instrument_file(Path(path))
    if not path.is_file():
        return read_run(path, columns=[]).instrument  # raises the reason there is nothing to read
    try:
        schema = pq.read_schema(path)
        schema.names  # noqa: B018 - a damaged footer can hold names that are not UTF-8
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from exc
    return _instrument(schema, path)


def peek_instrument(path: str | Path) -> Instrument:
    """:func:`read_instrument`'s instrument, taken from the footer's key-value metadata
    alone when its seal checksum matches (:func:`memrun.io.footer.sealed_values`): about
    0.1 ms a file instead of the milliseconds pyarrow takes to decode every column's
    metadata, for listing many runs. The column list is not checked against the file's
    columns (:func:`read_run` does). Whatever the fast read cannot vouch for (a file from
    before the seal, damage, a foreign footer) goes through :func:`read_instrument`, which
    raises its RunTableError or warns as it always does."""
    file = _instrument_file(Path(path))
    if file.is_file():
        try:
            values = io_footer.sealed_values(file)
            if values is not None:
                return Instrument.from_json(values[METADATA_KEY])
        except (OSError, ValueError, TypeError):
            pass  # read_instrument says what is wrong
    return read_instrument(path)


def _read_table(path: Path, columns: Sequence[str] | None) -> tuple[pa.Table, pa.Schema]:
    """The table (``columns`` of it) and the file's full schema, its metadata verified."""
    try:  # one file, no dataset: pq.read_table would import pyarrow.dataset and pandas (seconds)
        with pq.ParquetFile(path, page_checksum_verification=True) as file:
            schema = file.schema_arrow
            schema.names  # noqa: B018 - a damaged footer can hold names that are not UTF-8
            if columns is not None:
                columns = [c for c in columns if c in set(schema.names)]
            table = file.read(columns=columns)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from exc
    return table, schema


def _read_file(path: Path, columns: Sequence[str] | None = None) -> RunTable:
    _check_recorded_sha256(path)
    table, schema = _read_table(path, columns)
    _check_rows_once(table, path)
    return RunTable(path, table, _instrument(schema, path), complete=True)


def _check_rows_once(table: pa.Table, path: Path) -> None:
    """RunTableError naming ``path`` when ``table`` holds an (item_id, repeat) pair twice
    (:func:`repeated_rows`; only when both columns were read)."""
    if twice := repeated_rows(table):
        n, first = twice
        raise RunTableError(f"{path}: {n} (item_id, repeat) pair(s) occur on more than one row, first "
                            f"({first['item_id']!r}, {first['repeat']}): a table joining runs or shards by hand? "
                            "Its rows would count as more repeats of an item (the majority label, the flip rate) "
                            "or one of them be read alone; memrun merge joins a run's shards, checking this")


def read_summary(folder: str | Path) -> dict[str, Any] | None:
    """A run folder's ``summary.json`` as a dict, or None when it is missing, cannot be read,
    is not JSON or is JSON but not an object (a damaged or foreign file): callers show what
    they can without it, and :func:`read_run` refuses the rows of a folder whose summary is
    damaged, saying why. Every reader of a summary goes through here, so one bad file is
    never a crash of the page or table listing it."""
    try:
        summary = json.loads((Path(folder) / SUMMARY_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def _check_recorded_sha256(path: Path) -> None:
    """Compare ``path`` with the sha256 its run recorded in ``summary.json`` beside it.

    Page checksums catch most damage; this catches the rest (a changed footer, a file
    replaced by another run's). Runs from before the key existed are not checked.
    Raises RunTableError naming the file when they differ.
    """
    summary = path.parent / SUMMARY_FILE
    if path.name != ITEMS_FILE or not summary.is_file():
        return
    try:
        recorded = json.loads(summary.read_text()).get(SHA256_KEY)
    except (OSError, ValueError, AttributeError) as exc:  # the check cannot be made: say so, never skip it
        raise RunTableError(f"{summary} is damaged ({exc}), so {path} cannot be checked against the sha256 "
                            f"its run recorded; restore {SUMMARY_FILE} (or remove it to read the table unchecked)") from exc
    if recorded and file_sha256(path) != recorded:
        raise RunTableError(f"{path}: its sha256 differs from the one its run recorded in {SUMMARY_FILE} "
                            f"({recorded[:12]}...); the file was changed or damaged after the run: "
                            "re-run or restore it (a copy with columns of your own is read outside the run folder)")


def _instrument(schema: pa.Schema, path: Path) -> Instrument:
    """The instrument in ``schema``'s metadata (the file's full schema), its seal checked
    (:func:`memrun.io.metadata.verify`); a file from before the seal is read with a
    warning on stderr, once per file."""
    meta = schema.metadata or {}
    if METADATA_KEY not in meta:
        raise RunTableError(f"{path}: no memrun instrument in the Parquet metadata; not written by memrun, or "
                            "rewritten by a tool that drops it (pandas' to_parquet: put the original's "
                            "schema.metadata back with pyarrow's replace_schema_metadata)")
    try:
        instrument = Instrument.from_json(meta[METADATA_KEY])
    except (ValueError, TypeError) as exc:  # JSONDecodeError, UnicodeDecodeError, a non-object
        raise RunTableError(f"{path}: its memrun instrument (Parquet metadata {METADATA_KEY.decode()}) is not "
                            f"valid JSON ({exc}); the file is damaged: re-run or restore it") from exc
    if not verify(schema, path) and str(path) not in _warned:
        _warned.add(str(path))
        sys.stderr.write(f"memrun: warning: {path}: {LEGACY_WARNING}\n")
    return instrument


_warned: set[str] = set()  # files already warned about in this process
