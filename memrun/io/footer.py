"""A Parquet file's key-value metadata taken from its footer's bytes, without decoding the rest.

Decoding a footer with pyarrow builds every column's metadata (about 30 us a column:
3 ms for a run's 97 columns), which makes listing 500 runs take seconds. A listing needs
only the instrument, which the footer holds as key-value metadata. A Parquet file ends
with its footer (Thrift compact protocol), the footer's length (4 bytes, little endian)
and ``PAR1``; each key-value pair in it is a two-field struct encoded as
``0x18 <varint len> key 0x18 <varint len> value 0x00`` (field 1 and 2, type binary, stop).
:func:`sealed_values` finds memrun's sealed keys there and returns them only when their
checksum (:func:`memrun.io.metadata.checksum_matches`) says they are the bytes memrun
wrote; anything else (an encrypted or foreign footer, a file from before the seal, damage)
returns None and the caller reads the footer with pyarrow, which says what is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.core.instrument import METADATA_KEY
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.io import metadata as io_metadata
else:
    io_metadata = lazy("memrun.io.metadata")  # with pyarrow: only to check a sealed footer's checksum

MAGIC = b"PAR1"
TAIL = 8  # the footer's length (4 bytes) and the magic


def footer_bytes(path: str | Path) -> bytes | None:
    """The Thrift-encoded footer of the Parquet file at ``path``; None when the file does
    not end as a plain Parquet file does. Raises OSError when it cannot be read."""
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size < TAIL + len(MAGIC):
            return None
        fh.seek(size - TAIL)
        tail = fh.read(TAIL)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != MAGIC or not 0 < length <= size - TAIL - len(MAGIC):
            return None
        fh.seek(size - TAIL - length)
        return fh.read(length)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key_value(footer: bytes, key: bytes) -> bytes | None:
    """The value stored under ``key`` in ``footer``'s key-value metadata (the last pair of
    that key: the metadata follows the row groups), or None when not found whole. The
    caller verifies what it gets: a column's statistics could hold the same bytes."""
    at = footer.rfind(b"\x18" + _varint(len(key)) + key + b"\x18")
    if at < 0:
        return None
    pos = at + 2 + len(_varint(len(key))) + len(key)
    length = shift = 0
    while pos < len(footer) and shift < 35:
        byte = footer[pos]
        length |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            break
    else:
        return None
    end = pos + length
    return footer[pos:end] if end < len(footer) and footer[end] == 0 else None


def sealed_values(path: str | Path) -> dict[bytes, bytes] | None:
    """memrun's sealed metadata of the Parquet file at ``path`` (instrument, column list,
    checksum; see :mod:`memrun.io.metadata`), read from the footer's bytes alone, or None
    when they are not all there or their checksum does not match (read the file with
    pyarrow then). The column list is not checked against the file's columns here: the
    reader does that when it reads the rows. Raises OSError when the file cannot be read."""
    footer = footer_bytes(path)
    if footer is None:
        return None
    keys = (METADATA_KEY, io_metadata.COLUMNS_KEY, io_metadata.CHECKSUM_KEY)
    found = {key: key_value(footer, key) for key in keys}
    if any(v is None for v in found.values()):
        return None
    values: dict[bytes, bytes] = {k: v for k, v in found.items() if v is not None}
    if not io_metadata.checksum_matches(*(values[key] for key in keys)):
        return None
    return values
