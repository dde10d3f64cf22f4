"""The first, fast pass over a LongMemEval file: every question's id and type, and the
whole file validated (JSON syntax, UTF-8, every field's JSON type, required fields,
list lengths, unique ids), so that a malformed question fails before a run starts
rather than in the middle of it, when :mod:`memrun.benchmarks.longmemeval` streams the
questions again. Events come from ijson's parser (the yajl2_c backend when installed).

The scan is the same for the same bytes, so :func:`cached_scan_index` keeps its result in
memrun's user cache under the file's sha256 (which the loader computes anyway): a second
run over a file skips it (1.5 s for a 277 MB LongMemEval-S file on a 2-core machine).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import ijson

from memrun.benchmarks.text import BOM, stream_json_problem
from memrun.core.paths import user_cache
from memrun.errors import DataError

SCAN_RULES = 1  # bump when scan_index checks or returns something else: older cached scans are not used

_STRING, _NUMBER, _NULL = frozenset({"string"}), frozenset({"number", "integer", "double"}), frozenset({"null"})
_SESSIONS = "item.haystack_sessions.item"
_TURN = _SESSIONS + ".item"
# The JSON value events each field may start with, and what to call the type in errors.
_TYPES: dict[str, tuple[frozenset[str], str]] = {
    "item.question_id": (_STRING, "a string"),
    "item.question_type": (_STRING, "a string"),
    "item.question": (_STRING, "a string"),
    "item.answer": (_STRING | _NUMBER, "a string or a number"),
    "item.question_date": (_STRING | _NULL, "a string"),
    "item.haystack_session_ids": (frozenset({"start_array"}), "a list"),
    "item.haystack_session_ids.item": (_STRING | _NUMBER, "a string"),
    "item.haystack_dates": (frozenset({"start_array"}), "a list"),
    "item.haystack_dates.item": (_STRING | _NULL, "a string"),
    "item.haystack_sessions": (frozenset({"start_array"}), "a list of sessions"),
    _SESSIONS: (frozenset({"start_array"}), "a list of turns"),
    _TURN: (frozenset({"start_map"}), "an object with 'role' and 'content'"),
    _TURN + ".role": (_STRING, "a string"),
    _TURN + ".content": (_STRING, "a string"),
    _TURN + ".has_answer": (frozenset({"boolean"}) | _NULL, "true or false"),
    "item.answer_session_ids": (frozenset({"start_array"}), "a list"),
    "item.answer_session_ids.item": (_STRING | _NUMBER, "a string"),
    "item.superseded_answer": (_STRING | _NUMBER | _NULL, "a string or a number"),
}
_REQUIRED = ("question_id", "question_type", "question", "answer", "haystack_session_ids", "haystack_dates",
             "haystack_sessions", "answer_session_ids")
_EVENT_TYPES = {"null": "null", "boolean": "a boolean", "integer": "a number", "double": "a number",
                "number": "a number", "string": "a string", "start_map": "an object", "start_array": "a list"}
_LISTS = ("item.haystack_session_ids.item", "item.haystack_dates.item", _SESSIONS, "item.answer_session_ids.item")


def open_json(path: Path) -> BinaryIO:
    """``path`` opened for ijson, past a UTF-8 byte-order mark when there is one."""
    f = path.open("rb")
    if f.read(len(BOM)) != BOM:
        f.seek(0)
    return f


class _Question:
    """What the scan knows of the question being read: id, type, keys, list positions."""

    def __init__(self, path: Path, position: int) -> None:
        self.path, self.position = path, position
        self.fields: dict[str, Any] = {}
        self.keys: set[str] = set()
        self.lengths = dict.fromkeys(_LISTS, 0)  # entries seen so far in each list
        self.turn = -1  # index of the turn being read in the current session
        self.turn_keys: set[str] = set()

    def where(self, prefix: str) -> str:
        """The field at ``prefix`` as the user wrote it: ``haystack_sessions[3][1].role``."""
        if prefix.startswith(_SESSIONS):
            session = f"haystack_sessions[{self.lengths[_SESSIONS] - (prefix != _SESSIONS)}]"
            rest = prefix[len(_TURN):] if prefix.startswith(_TURN) else None
            return session if rest is None else f"{session}[{self.turn}]{rest}"
        if prefix in self.lengths:
            return f"{prefix[5:-5]}[{self.lengths[prefix]}]"
        return prefix[5:]

    def fail(self, field: str, problem: str) -> NoReturn:
        qid = f" ({self.fields['question_id']})" if isinstance(self.fields.get("question_id"), str) else ""
        raise DataError(f"{self.path}: question {self.position}{qid}: {field}{problem}")

    def value(self, prefix: str, event: str, value: Any) -> None:
        """Check one value event against :data:`_TYPES`; note what later checks need."""
        allowed = _TYPES.get(prefix)
        if allowed is None:
            return
        if event not in allowed[0]:
            self.fail(f"'{self.where(prefix)}'", f" must be {allowed[1]}, got {_EVENT_TYPES[event]}")
        if prefix == "item.question_id" or prefix == "item.question_type":
            self.fields[prefix[5:]] = value
        elif prefix in self.lengths:
            self.lengths[prefix] += 1
            if prefix == _SESSIONS:
                self.turn = -1
        elif prefix == _TURN:
            self.turn += 1
            self.turn_keys = set()

    def end_turn(self) -> None:
        for key in ("role", "content"):
            if key not in self.turn_keys:
                self.fail(f"'{self.where(_TURN)}.{key}'", " is missing")

    def end(self) -> None:
        for key in _REQUIRED:
            if key not in self.keys:
                self.fail(f"'{key}'", " is missing")
        n = [self.lengths[k] for k in _LISTS[:3]]
        if not n[0] == n[1] == n[2]:
            self.fail("", f"haystack_session_ids, haystack_dates and haystack_sessions have {n[0]}, {n[1]} "
                          f"and {n[2]} entries; they must be equal")


def scan_index(path: Path) -> list[tuple[str, str]]:
    """``(question_id, question_type)`` of every question, in file order, in one fast pass.

    Validates the whole file on the way, so that a malformed question stops the run
    before it starts (the questions are read again, lazily, while the run goes): JSON
    syntax and UTF-8 (a byte-order mark is skipped), a top level that is an array of
    objects, each field's JSON type (:data:`_TYPES`), the required fields, turns with
    ``role`` and ``content``, the three haystack lists of equal length, and question ids
    that occur once. Raises DataError naming the question and the field.
    """
    index: list[tuple[str, str]] = []
    first_at: dict[str, int] = {}
    q = _Question(path, 0)
    with open_json(path) as f:
        events = ijson.parse(f)
        try:
            head = next(events, None)
            if head is None or head[1] != "start_array":
                raise DataError(f"{path}: expected a JSON array of questions")
            for prefix, event, value in events:
                if event == "map_key":
                    if prefix == "item":
                        q.keys.add(value)
                    elif prefix == _TURN:
                        q.turn_keys.add(value)
                elif event == "end_map":
                    if prefix == "item":
                        q.end()
                        index.append(_index_entry(path, len(index), q.fields, first_at))
                        q = _Question(path, len(index))
                    elif prefix == _TURN:
                        q.end_turn()
                elif event == "end_array":
                    continue
                elif prefix == "item":
                    if event != "start_map":
                        raise DataError(f"{path}: question {len(index)}: expected an object, got {_EVENT_TYPES[event]}")
                elif prefix in _TYPES:
                    q.value(prefix, event, value)
        except ijson.JSONError as exc:
            raise DataError(
                f"{path}: after {len(index)} question{'' if len(index) == 1 else 's'}: {stream_json_problem(exc, path)}"
            ) from exc
    return index


def _index_entry(path: Path, position: int, fields: dict[str, Any], first_at: dict[str, int]) -> tuple[str, str]:
    qid = fields["question_id"]
    if qid in first_at:
        raise DataError(
            f"{path}: question_id {qid!r} occurs twice (questions {first_at[qid]} and {position}); ids must be unique"
        )
    first_at[qid] = position
    return qid, fields["question_type"]


def scan_cache_file(sha256: str) -> Path:
    """Where the scan of the file whose bytes have ``sha256`` is kept (memrun's user cache)."""
    return user_cache("scans", f"longmemeval-{sha256}-r{SCAN_RULES}.json")


def cached_scan_index(path: Path, sha256: str) -> list[tuple[str, str]]:
    """:func:`scan_index` of ``path``, whose bytes have ``sha256``: read from the cache when a
    run already scanned the same bytes under the same rules (:data:`SCAN_RULES`), else
    scanned and kept. A missing, unreadable or damaged cache file only means a scan; a
    cache that cannot be written is skipped. Raises what :func:`scan_index` raises."""
    cache = scan_cache_file(sha256)
    try:
        kept = json.loads(cache.read_text())
        if kept["sha256"] == sha256 and kept["rules"] == SCAN_RULES:
            return [(str(qid), str(qtype)) for qid, qtype in kept["index"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    index = scan_index(path)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"sha256": sha256, "rules": SCAN_RULES, "index": index}))
        tmp.replace(cache)
    except OSError:
        pass
    return index
