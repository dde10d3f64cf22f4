"""Several runs' rows as one table, for querying a whole sweep at once.

Runs with different cut-offs (``ks``) have different metric columns, and
``pyarrow.dataset`` over a sweep silently drops the columns its first file lacks; this
takes the union of the columns (a run without a column gets nulls there) and adds the
instrument's key fields as columns, so that one table says which run each row came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.core.instrument import Instrument
from memrun.errors import RunTableError
from memrun.io.reader import read_run

# each once: a field named here may also be a comparability field (repeats is)
KEY_FIELDS = tuple(dict.fromkeys(("arm", *Instrument.comparability_fields(), "status", "repeats", "seed")))
"""Instrument fields copied onto every row, prefixed ``instrument_``."""


def combine_runs(run_dirs: Sequence[Path], out: Path) -> int:
    """Write the rows of ``run_dirs`` as one Parquet file at ``out``; returns the row count.

    Every row keeps its ``run_id``; columns are the union of the runs' columns; each
    :data:`KEY_FIELDS` value is a string column ``instrument_<field>`` (JSON-like text for
    non-string values). Raises RunTableError for an unreadable run or no run at all.
    """
    tables = []
    for folder in run_dirs:
        try:
            run = read_run(folder)
        except RunTableError:
            continue  # a job that wrote no rows has nothing to add
        table = run.table.replace_schema_metadata(None)
        for name in KEY_FIELDS:
            value = getattr(run.instrument, name, None)
            text = None if value is None else str(value)
            table = table.append_column(f"instrument_{name}", pa.array([text] * table.num_rows, pa.string()))
        tables.append(table)
    if not tables:
        raise RunTableError("no run of the sweep wrote rows; nothing to combine")
    combined = pa.concat_tables(tables, promote_options="permissive")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(combined, out)
    except (OSError, pa.ArrowException) as exc:
        raise RunTableError(f"cannot write {out} ({exc}); name a writable file") from exc
    return combined.num_rows
