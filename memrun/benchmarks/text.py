"""Reading data files as text, strictly: UTF-8 (a leading byte-order mark is accepted and
dropped), never decoded with replacement characters, and JSON Lines split on ``\\n`` only.

``str.splitlines()`` also splits on U+2028, U+2029, U+0085 and other characters that a
JSON string may hold unescaped, which would cut one record into several broken lines;
:func:`jsonl_lines` splits the bytes on ``\\n`` before decoding. Byte offsets in errors
count from the start of the file (0-based, as ``xxd -s`` and ``dd skip=`` take them).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memrun.errors import DataError

BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class Line:
    """One line of a JSON Lines file: its 1-based number, its text (None when it is not
    UTF-8) and, then, ``error``: ``invalid UTF-8 at byte N``."""

    number: int
    text: str | None
    error: str | None = None


def _invalid(offset: int) -> str:
    return f"invalid UTF-8 at byte {offset}"


def jsonl_lines(blob: bytes) -> Iterator[Line]:
    """The lines of ``blob`` split on ``\\n`` only (a ``\\r`` before it stays: JSON ignores
    it), each decoded as strict UTF-8 after dropping a leading BOM."""
    offset = len(BOM) if blob.startswith(BOM) else 0
    for number, raw in enumerate(blob[offset:].split(b"\n"), start=1):
        try:
            yield Line(number, raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            yield Line(number, None, _invalid(offset + exc.start))
        offset += len(raw) + 1


def decode_strict(blob: bytes, where: str | Path) -> str:
    """``blob`` as text (strict UTF-8, a leading BOM dropped). Raises DataError
    ``<where>: line L: invalid UTF-8 at byte N``."""
    start = len(BOM) if blob.startswith(BOM) else 0
    try:
        return blob[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = start + exc.start
        line = blob.count(b"\n", 0, at) + 1
        raise DataError(f"{where}:{line}: {_invalid(at)}") from None


def read_text_strict(path: Path) -> str:
    """The file at ``path`` as text (see :func:`decode_strict`). Raises DataError when it
    cannot be read or is not UTF-8."""
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    return decode_strict(blob, path)


def json_type(value: object) -> str:
    """The JSON type of a parsed value, for errors: ``null``, ``a boolean``, ``a number``,
    ``a string``, ``a list``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, (list, tuple)) else "an object" if isinstance(value, dict) else type(value).__name__
