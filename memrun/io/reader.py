"""Read a run back: its per-item table and its instrument."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.errors import RunTableError
from memrun.instrument import METADATA_KEY, Instrument
from memrun.io.writer import ITEMS_FILE, PARTS_DIR


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


def read_run(path: str | Path) -> RunTable:
    """Open a run folder or an ``items.parquet`` file.

    A folder without ``items.parquet`` but with ``items.parts/`` (a run killed before
    it finished) is read from its parts. Raises RunTableError naming the path when
    there is nothing to read or the file is not a memrun table.
    """
    path = Path(path)
    if path.is_dir():
        if (path / ITEMS_FILE).is_file():
            return _read_file(path / ITEMS_FILE)
        parts = sorted((path / PARTS_DIR).glob("part-*.parquet"))
        if parts:
            tables = [pq.read_table(p) for p in parts]
            return RunTable(path, pa.concat_tables(tables), _instrument(tables[-1].schema, path), complete=False)
        if (path / PARTS_DIR).is_dir() or (path / ".hydra").is_dir():
            raise RunTableError(f"{path}: this run wrote no rows (it stopped before its first rows were saved)")
        raise RunTableError(f"{path}: no {ITEMS_FILE} and no {PARTS_DIR}/ here; is this a memrun run folder?")
    if path.is_file():
        return _read_file(path)
    raise RunTableError(f"{path}: no such file or folder")


def _read_file(path: Path) -> RunTable:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise RunTableError(f"{path}: not a readable Parquet file ({exc})") from exc
    return RunTable(path, table, _instrument(table.schema, path), complete=True)


def _instrument(schema: pa.Schema, path: Path) -> Instrument:
    meta = schema.metadata or {}
    if METADATA_KEY not in meta:
        raise RunTableError(f"{path}: no memrun instrument in the Parquet metadata; not written by memrun")
    return Instrument.from_json(meta[METADATA_KEY])
