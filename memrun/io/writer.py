"""Crash-safe writing of ``items.parquet``.

Rows are buffered and flushed as small, complete Parquet files under ``items.parts/``, so
what finished survives a crash or a kill. The first part is written a second after the
start, each later one twice as long after the one before, up to :data:`MAX_FLUSH_SECONDS`
(at 1, 3, 7, 15, 23, 31... s; sooner when ``flush_rows`` rows wait): a kill -9 loses the
rows since the last part, in a steady run at most the last 8 s of them (on the accuracy axis
their calls are in the cache: the same command answers them again without a call). The wait
is checked as a row arrives, so rows that finished before a stall (a slow arm's next
ingest, a long rate-limit wait) are written when the next row comes, or at the end. Flushing by time, not every few hundred rows,
keeps a short run (a cached re-run takes ~1 s) from encoding its rows twice, into parts
and again into the merged file; the growing wait keeps a longer one from doing so for most
of its rows (a part also costs ~3-5 ms of its own): the accuracy bench's 11 s cold run
wrote 10 parts at one a second, and writes 3. :meth:`ItemsWriter.close` merges the parts and the last
buffered rows into ``items.parquet`` with the instrument in its schema metadata and
removes the parts. :func:`memrun.io.reader.read_run` reads either form.

Parts are written by one background thread, in order: encoding a part takes up to tens
of ms, and on the accuracy axis the caller is the event loop that every in-flight call
is waiting on. A failed write is raised by the next ``flush``, ``wait`` or ``close``.
The merged file is written on that thread too (:meth:`ItemsWriter.start_close`), so that
a run computes its summary while Parquet encodes and writes it (both release the GIL);
:meth:`ItemsWriter.close` waits for it. Rows become Arrow columns in one conversion of
the rows as a struct array (:func:`rows_table`), in Arrow's C++, not a Python pass
per column (``Table.from_pylist``: half the time of a cached re-run's table).
That thread also imports pyarrow (~0.2 s) when the schema is given as a function, from the
first row on: the run's later requests go out meanwhile instead of waiting for it, and its
first request does not wait either (an import started earlier contends with the run's
start-up for the GIL, which pyarrow's initialisation holds for ~0.1 s at a time).

Every file is written with Parquet page checksums (CRC32), which the reader verifies: a
flipped bit in the data fails the read instead of changing a value. ``close`` also
records the finished file's sha256 (:attr:`ItemsWriter.sha256`), which the run saves in
``summary.json`` as :data:`SHA256_KEY` and the reader checks. The footer (column names,
types, the instrument) is sealed with a checksum of its own
(:mod:`memrun.io.metadata`), checked on every read, so a part or an ``items.parquet``
read without its ``summary.json`` is verified too.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import shutil
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from memrun.core.instrument import Instrument
from memrun.errors import RunTableError
from memrun.io.metadata import seal_schema, seal_table
from memrun.lazy import lazy

# Imported on the writer's thread when a run gives its schema as a function (module docstring).
if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow import parquet as pq
else:
    pa = lazy("pyarrow")
    pq = lazy("pyarrow.parquet")

ITEMS_FILE = "items.parquet"
MAX_FLUSH_SECONDS = 8.0
"""The longest wait between two parts (module docstring)."""
PARTS_DIR = "items.parts"
SUMMARY_FILE = "summary.json"  # the run-level figures, beside items.parquet
RESUMED_FILE = "resumed.json"  # in an unfinished run once a later run took its rows over (memrun.pipeline.resume)
SHA256_KEY = "items_sha256"  # summary.json: the sha256 of the finished items.parquet
CONVERT_ROWS = 1024  # rows per struct conversion (rows_table): ~8 ms holding the GIL


def rows_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` as a table of ``schema``: a key a row lacks is null there, a key outside the
    schema is left out (as ``pa.Table.from_pylist`` does). Raises pyarrow's ArrowInvalid or
    ArrowTypeError for a value of the wrong type.

    Dict rows are converted as struct arrays, in Arrow's C++ (each row's fields looked up
    there): about half the CPU of ``from_pylist``, which builds a Python list per column
    first (6,000 rows x 106 columns: ~45 vs ~90 ms). A conversion holds the GIL until it
    returns, so rows go :data:`CONVERT_ROWS` at a time: the thread that waits for the GIL
    (the event loop while parts are written, the summary while the run's table is) gets it
    back every ~8 ms. Other mappings take ``from_pylist``.
    """
    if not all(type(row) is dict for row in rows):
        return pa.Table.from_pylist(list(rows), schema=schema)
    kind = pa.struct(list(schema))
    batches = [pa.RecordBatch.from_struct_array(pa.array(rows[start:start + CONVERT_ROWS], type=kind))
               for start in range(0, len(rows), CONVERT_ROWS)]
    return pa.Table.from_batches(batches, schema=schema)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_PROBE_LOCK = threading.Lock()


# What pyarrow's first inference of Python values imports only to recognise their types:
# pandas (its NA, Timestamp, DateOffset) and dateutil (relativedelta, ~3 ms with six).
_PROBED = ("pandas", "dateutil")


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that says pandas and dateutil (:data:`_PROBED`) are not installed, to
    the thread running :func:`skip_pandas_probe`'s probe only; every other import passes it by."""

    def __init__(self) -> None:
        self.probing: int | None = None  # the probing thread's ident, while it probes

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname in _PROBED and self.probing == threading.get_ident():
            raise ModuleNotFoundError(f"{fullname} is not needed to write rows", name=fullname)
        return None


_NO_PANDAS = _NoPandas()


def skip_pandas_probe() -> None:
    """Let pyarrow find pandas absent when it first converts Python values, so a run does
    not import pandas (0.5 s of CPU, seconds on a busy machine, held under the GIL while the
    event loop waits on it).

    pyarrow imports pandas on its first ``pa.array`` of Python values only to ask whether
    they are pandas objects (its ``_pandas_api`` shim); memrun's rows are dicts and lists.
    The first probe runs here with an import finder that refuses pandas to this thread; the
    shim then remembers "no pandas" for such probes, while anything that really uses pandas
    (``Table.from_pandas``, ``to_pandas``) still imports it then. A process that has already
    imported pandas is left as it is. The probe's inference (an untyped ``pa.array``) also
    imports ``dateutil.relativedelta`` to recognise such values, ~3 ms of a run with ``six``:
    refused too, for that inference only (each one asks again; a run's rows are converted
    with their schema's types, never inferred).

    The finder is put first in ``sys.meta_path`` once and stays there: taking an entry out
    of that list while another thread's import walks it makes the walk skip the finder after
    it (a run's lazy ``import memrun.accuracy.stage`` then failed with "No module named
    'memrun.judges.lexical'" while this probe ran on the writer's thread). Putting one in
    only makes a walk ask a finder twice.
    """
    with _PROBE_LOCK:
        if "pandas" in sys.modules:
            return
        if not any(finder is _NO_PANDAS for finder in sys.meta_path):
            sys.meta_path.insert(0, _NO_PANDAS)
        _NO_PANDAS.probing = threading.get_ident()
        try:
            pa.array([])
        finally:
            _NO_PANDAS.probing = None


class ItemsWriter:
    """Append rows; flush them as parts; merge the parts into one file at the end.

    folder: the run folder (created if missing).
    schema: the table schema (:func:`memrun.io.schema.items_schema`), or a function of no
    argument that returns it: it is then called on the writer's thread when the first row
    arrives (or the schema is first read), so that importing pyarrow overlaps the rows that
    follow; :attr:`schema` waits for it.
    instrument: written into every part and the final file (its current state).
    flush_rows, flush_seconds: a part is written when this many rows wait, or when a row
    arrives ``flush_seconds`` after the start; each later wait is twice the one before, up to
    ``max_flush_seconds`` (module docstring).
    """

    def __init__(
        self,
        folder: Path,
        schema: pa.Schema | Callable[[], pa.Schema],
        instrument: Instrument,
        *,
        flush_rows: int = 10_000,
        flush_seconds: float = 1.0,
        max_flush_seconds: float = MAX_FLUSH_SECONDS,
    ) -> None:
        self.folder = Path(folder)
        self.parts = self.folder / PARTS_DIR
        if (self.folder / ITEMS_FILE).exists() or (self.parts.is_dir() and any(self.parts.iterdir())):
            raise RunTableError(
                f"{self.folder} already holds a run's rows; give this run its own folder (hydra.run.dir=... on the "
                "command line, out_dir= in memrun.run)"
            )
        self.parts.mkdir(parents=True, exist_ok=True)
        self.instrument = instrument
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.max_flush_seconds = max_flush_seconds
        self._wait = flush_seconds  # before the next part: doubled at each part, up to max_flush_seconds
        self._buffer: list[Mapping[str, Any]] = []
        self._last_flush = time.monotonic()
        self._n_parts = 0
        self._tables: list[pa.Table] = []  # what the parts hold, kept to merge without re-reading
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memrun-writer")
        self._pending: list[Future[None]] = []
        self._schema_source = schema
        self._schema: Future[pa.Schema] | None = None  # the first task of the thread, at the first row
        self._closing: Future[None] | None = None  # the merge into items.parquet (start_close)
        self.rows_written = 0
        self.sha256: str | None = None  # of items.parquet, once close() wrote it

    @staticmethod
    def _prepare(schema: pa.Schema | Callable[[], pa.Schema]) -> pa.Schema:
        skip_pandas_probe()
        return schema() if callable(schema) else schema

    def _start(self) -> Future[pa.Schema]:
        """The schema's task on the writer's thread, submitted at the first call (before any part)."""
        if self._schema is None:
            self._schema = self._pool.submit(self._prepare, self._schema_source)
        return self._schema

    @property
    def schema(self) -> pa.Schema:
        """The table schema (waits for the writer's thread to build it; raises what building it raised)."""
        return self._start().result()

    def add(self, row: Mapping[str, Any]) -> None:
        """Buffer one row; flush when the buffer is full or old enough."""
        if self._schema is None:
            self._start()
        self._buffer.append(row)
        if len(self._buffer) >= self.flush_rows or time.monotonic() - self._last_flush >= self._wait:
            self.flush()

    def flush(self) -> None:
        """Hand the buffered rows to the writer thread as one part file (atomic rename); do not wait."""
        self._raise_failed()
        if not self._buffer:
            return
        rows, self._buffer = self._buffer, []
        name = self.parts / f"part-{self._n_parts:05d}.parquet"
        self._n_parts += 1
        # The instrument as it is now (the run goes on changing it); sealed on the writer's thread.
        self._pending.append(self._pool.submit(self._write_part, rows, self.instrument.to_json(), name))
        self._last_flush = time.monotonic()
        self._wait = min(2 * self._wait, max(self.max_flush_seconds, self.flush_seconds))

    def _write_part(self, rows: list[Mapping[str, Any]], instrument_json: str, name: Path) -> None:
        table = rows_table(rows, seal_schema(self.schema, instrument_json))
        tmp = name.with_suffix(".tmp")
        pq.write_table(table, tmp, write_page_checksum=True)
        tmp.replace(name)
        self._tables.append(table)  # parts finish in order: one thread
        self.rows_written += len(rows)

    def _raise_failed(self) -> None:
        done = [f for f in self._pending if f.done()]
        self._pending = [f for f in self._pending if not f.done()]
        for future in done:
            future.result()  # re-raises the write's error

    def wait(self) -> None:
        """Wait until every part handed to the writer thread is on disk (raises a failed write's error)."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def start_close(self) -> None:
        """Hand the merge to the writer's thread: the parts and the buffered rows (which go
        straight into the merged file, not through a last part) become ``items.parquet``,
        sealed with the instrument as it is now, while the caller goes on (a run computes
        its summary meanwhile). :meth:`close` waits for it; calling this again does nothing."""
        if self._closing is not None:
            return
        self._start()  # a table of no rows needs its schema too
        rows, self._buffer = self._buffer, []
        self._closing = self._pool.submit(self._write_final, rows, self.instrument.to_json())

    def _write_final(self, rows: list[Mapping[str, Any]], instrument_json: str) -> None:
        for future in self._pending:  # the parts before it (one thread: already done, in order)
            future.result()
        if rows:
            self._tables.append(rows_table(rows, self.schema))
            self.rows_written += len(rows)
        table = pa.concat_tables(self._tables) if self._tables else self.schema.empty_table()
        table = seal_table(table, instrument_json)
        target = self.folder / ITEMS_FILE
        tmp = target.with_suffix(".tmp")
        pq.write_table(table, tmp, write_page_checksum=True)
        self.sha256 = file_sha256(tmp)
        tmp.replace(target)

    def close(self) -> Path:
        """Merge the parts and the buffered rows into ``items.parquet`` (with the instrument,
        :meth:`start_close` unless it was called), wait for it, remove the parts and return
        its path. Sets :attr:`sha256` to the written file's sha256; raises what a write raised.
        """
        try:
            self.start_close()
            assert self._closing is not None
            self._closing.result()
        finally:
            self._pool.shutdown(wait=True)
        shutil.rmtree(self.parts, ignore_errors=True)
        return self.folder / ITEMS_FILE
