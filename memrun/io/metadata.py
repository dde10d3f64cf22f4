"""The metadata memrun stores in a Parquet file's footer, sealed with a checksum.

Parquet's page checksums cover the data pages, not the footer, where the column names,
their types and the key-value metadata (the :class:`~memrun.core.instrument.Instrument`) live.
With ``summary.json`` beside ``items.parquet`` the file's recorded sha256 catches a
damaged footer; a bare ``items.parquet`` (copied alone, a part file) had no such check,
and a single flipped bit could rename a column or change an instrument value silently.
So every file memrun writes carries, beside the instrument:

- :data:`COLUMNS_KEY`: its columns as written, a JSON list of ``[name, arrow type]``;
- :data:`CHECKSUM_KEY`: ``sha256:<hex>`` of the instrument's bytes and those columns'.

:func:`verify` (called by :mod:`memrun.io.reader` on every read) recomputes the checksum
and checks that each recorded column is in the file under its name and type. A column
added by another tool after memrun wrote the file is allowed, as is, in a file pandas
wrote (its ``pandas`` metadata), an integer column read back as floating point and an
all-null column as type null (what a pandas round trip does, :func:`_widened`); a renamed, missing or retyped column, or any changed byte of the instrument or of
the column list, is refused. A file from before the checksum existed is read with a
warning (:data:`LEGACY_WARNING`), since nothing in it can be verified.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from memrun.core.instrument import METADATA_KEY, Instrument
from memrun.errors import RunTableError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")  # a run's writer imports it on its own thread (memrun.io.writer)

COLUMNS_KEY = b"memrun.columns"
CHECKSUM_KEY = b"memrun.checksum"
PANDAS_KEY = b"pandas"  # the metadata pandas writes: the file went through a DataFrame
LEGACY_WARNING = ("written before memrun sealed its metadata with a checksum, so its column names and "
                  "instrument cannot be verified")


def _type(kind: pa.DataType) -> str:
    """Arrow type as text, up to representation: a list's element name (Parquet may read
    ``item`` back as ``element``) and 32- vs 64-bit offsets (pandas writes
    ``large_string``) are left out; the values read are the same."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{_type(kind.value_type)}>"
    if pa.types.is_large_string(kind):
        return "string"
    return "binary" if pa.types.is_large_binary(kind) else str(kind)


def _columns(schema: pa.Schema) -> bytes:
    return json.dumps([[f.name, _type(f.type)] for f in schema], ensure_ascii=False).encode()


def _checksum(instrument: bytes, columns: bytes) -> bytes:
    digest = hashlib.sha256()
    for part in (instrument, columns):  # length-prefixed: no two pairs hash alike
        digest.update(len(part).to_bytes(8, "big") + part)
    return b"sha256:" + digest.hexdigest().encode()


def checksum_matches(instrument: bytes, columns: bytes, checksum: bytes) -> bool:
    """Whether ``checksum`` (a :data:`CHECKSUM_KEY` value) seals ``instrument`` (the
    :data:`~memrun.core.instrument.METADATA_KEY` value) and ``columns`` (:data:`COLUMNS_KEY`)."""
    return _checksum(instrument, columns) == checksum


def sealed(schema: pa.Schema, instrument: Instrument | str) -> dict[bytes, bytes]:
    """The footer metadata for a file of ``schema`` written by a run with ``instrument``
    (or its JSON, :meth:`~memrun.core.instrument.Instrument.to_json`): the instrument's JSON,
    the column list and their checksum."""
    meta = (instrument if isinstance(instrument, str) else instrument.to_json()).encode()
    columns = _columns(schema)
    return {METADATA_KEY: meta, COLUMNS_KEY: columns, CHECKSUM_KEY: _checksum(meta, columns)}


def seal_schema(schema: pa.Schema, instrument: Instrument | str) -> pa.Schema:
    """``schema`` carrying :func:`sealed` metadata (any metadata it had is replaced)."""
    return schema.with_metadata(sealed(schema, instrument))


def seal_table(table: pa.Table, instrument: Instrument | str) -> pa.Table:
    """``table`` carrying :func:`sealed` metadata (any metadata it had is replaced);
    ``instrument`` as in :func:`sealed`."""
    return table.replace_schema_metadata(sealed(table.schema, instrument))


def verify(schema: pa.Schema, path: object) -> bool:
    """Check the sealed metadata of the file at ``path`` whose full schema is ``schema``.

    Returns True when it verifies, False for a file written before the checksum existed
    (no :data:`CHECKSUM_KEY` and no :data:`COLUMNS_KEY`). Raises RunTableError naming the
    file when the checksum does not match the instrument and column list, or a recorded
    column is missing, renamed or retyped (see the module docstring).
    """
    meta = schema.metadata or {}
    checksum, columns = meta.get(CHECKSUM_KEY), meta.get(COLUMNS_KEY)
    if checksum is None and columns is None:
        return False
    damaged = f"{path}: its metadata is damaged"
    fix = "re-run or restore the file"
    if checksum is None or columns is None or not checksum_matches(meta.get(METADATA_KEY, b""), columns, checksum):
        raise RunTableError(f"{damaged}: the instrument or column list does not match the checksum memrun wrote "
                            f"({CHECKSUM_KEY.decode()}); {fix}")
    try:
        recorded = json.loads(columns)
        pairs = [(str(name), str(kind)) for name, kind in recorded]
    except (ValueError, TypeError) as exc:  # sealed by a checksum, so not damage: a foreign writer
        raise RunTableError(f"{path}: its column list ({COLUMNS_KEY.decode()}) is not memrun's; {fix}") from exc
    present = {f.name: f.type for f in schema}
    meta_pandas = PANDAS_KEY in meta
    for name, kind in pairs:
        if name not in present:
            raise RunTableError(f"{damaged}: column {name!r} that memrun wrote is not in the file "
                                f"(renamed or removed); {fix}")
        if _type(present[name]) != kind and not (meta_pandas and _widened(kind, present[name])):
            raise RunTableError(f"{damaged}: column {name!r} was written as {kind} but reads as "
                                f"{present[name]}; {fix}")
    return True


def _widened(written: str, found: pa.DataType) -> bool:
    """What a pandas round trip does to a column's type: an integer column with nulls comes
    back as floating point, an all-null column (or a list column of empty lists) as type
    null. Accepted only in a file pandas wrote: elsewhere one flipped bit turns Parquet's
    INT32 into DOUBLE."""
    if pa.types.is_list(found) or pa.types.is_large_list(found):
        return written.startswith("list<") and (
            _type(found.value_type) == written[5:-1] or _widened(written[5:-1], found.value_type))
    return pa.types.is_null(found) or (written.startswith(("int", "uint")) and pa.types.is_floating(found))
