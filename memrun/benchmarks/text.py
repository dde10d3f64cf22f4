"""Reading data files as text, strictly: UTF-8 (a leading byte-order mark is accepted and
dropped), never decoded with replacement characters, and JSON Lines split on ``\\n`` only.

``str.splitlines()`` also splits on U+2028, U+2029, U+0085 and other characters that a
JSON string may hold unescaped, which would cut one record into several broken lines;
:func:`jsonl_lines` splits the bytes on ``\\n`` before decoding. Byte offsets in errors
count from the start of the file (0-based, as ``xxd -s`` and ``dd skip=`` take them).
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from memrun.errors import ConfigError, DataError

BOM = codecs.BOM_UTF8
MAX_LINE_ENV = "MEMRUN_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES = 64 << 20  # 64 MiB: locomo10.json (all 10 conversations) 20 times over


@dataclass(frozen=True)
class Line:
    """One line of a JSON Lines file: its 1-based number, its text (None when it cannot be
    read) and, then, ``error``: ``invalid UTF-8 at byte N`` or ``line is longer than ...``."""

    number: int
    text: str | None
    error: str | None = None


_ANSWER_ENCODER = json.JSONEncoder(ensure_ascii=False)


def answer_json(value: Any) -> str:
    """``value`` (an answer as a file gives it: text, a number, null, a list...) as JSON text,
    non-ASCII kept: the bytes of ``json.dumps(value, ensure_ascii=False)``, from one encoder
    made once (``json.dumps`` with an argument makes a new one per call: ~2 us of a LoCoMo
    item's build). An item's ``answer_raw``."""
    return _ANSWER_ENCODER.encode(value)


def _invalid(offset: int) -> str:
    return f"invalid UTF-8 at byte {offset}"


def max_line_bytes() -> int:
    """The longest JSON Lines line memrun reads, in bytes (``\\n`` excluded):
    ``$MEMRUN_MAX_LINE_BYTES``, else :data:`DEFAULT_MAX_LINE_BYTES`. A longer line is an
    error on that line rather than a file read whole into memory (a 2 GB line was a
    MemoryError). Raises ConfigError when the variable is not a positive integer."""
    raw = os.environ.get(MAX_LINE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_LINE_BYTES
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{MAX_LINE_ENV}={raw}: give a positive number of bytes (default {DEFAULT_MAX_LINE_BYTES})")
    return value


def jsonl_lines(path: Path, digest: Any = None, limit: int | None = None) -> Iterator[Line]:
    """The lines of the file at ``path``, streamed: split on ``\\n`` only (a ``\\r``
    before it stays: JSON ignores it), each decoded as strict UTF-8 after dropping a
    leading BOM. At most one line (``limit`` bytes, default :func:`max_line_bytes`) is in
    memory at a time; a longer line is skipped unread and yielded as an error
    (``line is longer than N bytes ...``). ``digest`` (a hashlib object), when given, is
    fed every byte of the file. Raises DataError when the file cannot be read."""
    limit = max_line_bytes() if limit is None else limit
    try:
        with path.open("rb") as f:
            yield from _lines(f, digest, limit)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc


def _lines(f: BinaryIO, digest: Any, limit: int) -> Iterator[Line]:
    offset = number = 0
    while raw := f.readline(limit + 1):
        number += 1
        if digest is not None:
            digest.update(raw)
        start = offset
        offset += len(raw)
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            offset += _skip_line(f, digest)
            yield Line(number, None, f"line is longer than {limit:,} bytes, the limit (set {MAX_LINE_ENV} to raise it)")
            continue
        raw = raw.removesuffix(b"\n")
        skip = len(BOM) if number == 1 and raw.startswith(BOM) else 0
        try:
            yield Line(number, raw[skip:].decode("utf-8"))
        except UnicodeDecodeError as exc:
            yield Line(number, None, _invalid(start + skip + exc.start))


def _skip_line(f: BinaryIO, digest: Any) -> int:
    """Read past the rest of the current line in 1 MiB blocks; returns the bytes read."""
    skipped = 0
    while block := f.readline(1 << 20):
        skipped += len(block)
        if digest is not None:
            digest.update(block)
        if block.endswith(b"\n"):
            break
    return skipped


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


CUT_SHORT = ("the text ends in the middle of a value, so it was cut short (an interrupted download or copy?); "
             "fetch or copy the file again")


EMPTY = "the file is empty (or only white space: an interrupted download or copy?); fetch or copy the file again"


def json_problem(exc: json.JSONDecodeError) -> str:
    """What :func:`json.loads` refused, in one line without the place: ``not valid JSON
    (Expecting ':' delimiter at column 6)``, or, when the parser ran off the end of the text
    (the usual sign of a truncated file), :data:`CUT_SHORT` with the parser's words after it
    (:data:`EMPTY` when there was no text at all)."""
    if not exc.doc.strip():
        return f"not valid JSON: {EMPTY}"
    what = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
    if exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string"):
        return f"not valid JSON: {CUT_SHORT} ({what})"
    return f"not valid JSON ({what})"


def json_file_error(path: Path, exc: json.JSONDecodeError) -> DataError:
    """The error for a whole JSON file :func:`json.loads` refused: ``{path}:{line}: `` and
    :func:`json_problem`."""
    return DataError(f"{path}:{exc.lineno}: {json_problem(exc)}")


def stream_json_problem(exc: Exception, path: Path) -> str:
    """:func:`json_problem` for a streaming parser's error (ijson; yajl's messages span lines
    and may be bytes) on the file at ``path``: the first line, ``invalid UTF-8`` said plainly,
    :data:`CUT_SHORT` for a premature end (:data:`EMPTY` for a file with no text at all)."""
    if _blank(path):
        return f"not valid JSON: {EMPTY}"
    arg = exc.args[0] if exc.args else ""
    text = (arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)).strip()
    if "invalid bytes in UTF8" in text:
        return "not valid JSON (invalid UTF-8)"
    first = text.splitlines()[0].strip() if text else type(exc).__name__
    if "premature EOF" in first or "Incomplete JSON content" in first:
        return f"not valid JSON: {CUT_SHORT} ({first})"
    return f"not valid JSON ({first})"


def _blank(path: Path, most: int = 1 << 16) -> bool:
    """True when the file at ``path`` holds nothing but white space (and a BOM); False for a
    file larger than ``most`` bytes or one that cannot be read."""
    try:
        with path.open("rb") as f:
            head = f.read(most + 1)
    except OSError:
        return False
    return len(head) <= most and not head.removeprefix(BOM).strip()


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
