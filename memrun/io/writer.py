"""Crash-safe writing of ``items.parquet``.

Rows are buffered and flushed as small, complete Parquet files under
``items.parts/`` (every ``flush_rows`` rows or ``flush_seconds`` seconds), so what
finished survives a crash or a kill. :meth:`ItemsWriter.close` merges the parts into
``items.parquet`` with the instrument in its schema metadata and removes them.
:func:`memrun.io.reader.read_run` reads either form.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.instrument import METADATA_KEY, Instrument

ITEMS_FILE = "items.parquet"
PARTS_DIR = "items.parts"


class ItemsWriter:
    """Append rows; flush them as parts; merge the parts into one file at the end.

    folder: the run folder (created if missing).
    schema: the table schema (:func:`memrun.io.schema.items_schema`).
    instrument: written into every part and the final file (its current state).
    """

    def __init__(
        self,
        folder: Path,
        schema: pa.Schema,
        instrument: Instrument,
        *,
        flush_rows: int = 500,
        flush_seconds: float = 5.0,
    ) -> None:
        self.folder = Path(folder)
        self.parts = self.folder / PARTS_DIR
        self.parts.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self.instrument = instrument
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._buffer: list[Mapping[str, Any]] = []
        self._last_flush = time.monotonic()
        self._n_parts = 0
        self._tables: list[pa.Table] = []  # what the parts hold, kept to merge without re-reading
        self.rows_written = 0

    def _with_metadata(self) -> pa.Schema:
        return self.schema.with_metadata({METADATA_KEY: self.instrument.to_json().encode()})

    def add(self, row: Mapping[str, Any]) -> None:
        """Buffer one row; flush when the buffer is full or old enough."""
        self._buffer.append(row)
        if len(self._buffer) >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Write buffered rows as one complete part file (atomic rename)."""
        if not self._buffer:
            return
        table = pa.Table.from_pylist(self._buffer, schema=self._with_metadata())
        name = self.parts / f"part-{self._n_parts:05d}.parquet"
        tmp = name.with_suffix(".tmp")
        pq.write_table(table, tmp)
        tmp.replace(name)
        self._tables.append(table)
        self._n_parts += 1
        self.rows_written += len(self._buffer)
        self._buffer.clear()
        self._last_flush = time.monotonic()

    def close(self) -> Path:
        """Flush, merge the parts into ``items.parquet`` (with the instrument), return its path."""
        self.flush()
        table = pa.concat_tables(self._tables) if self._tables else self.schema.empty_table()
        table = table.replace_schema_metadata({METADATA_KEY: self.instrument.to_json().encode()})
        target = self.folder / ITEMS_FILE
        tmp = target.with_suffix(".tmp")
        pq.write_table(table, tmp)
        tmp.replace(target)
        shutil.rmtree(self.parts, ignore_errors=True)
        return target
