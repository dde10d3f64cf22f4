"""``benchmark=jsonl``: a team's own benchmark in memrun's JSON Lines format.

One JSON object per line (blank lines and lines starting with ``//`` are skipped; UTF-8,
with or without a byte-order mark; lines end at ``\n`` only, so U+2028 or U+0085 inside a
string is text, not a line break), of one of two kinds:

- a *conversation*: one history and the questions asked against it::

    {"conversation_id": "c1",
     "history": [{"role": "user", "content": "...", "key": "c1:0",
                  "timestamp": "2024-05-01", "session": "s1"}, ...],
     "questions": [{"item_id": "c1:q0", "question": "...", "answer": "...",
                    "gold_keys": ["c1:0"], "category": "single-hop"}, ...]}

- an *item*: one question with a history of its own (as in LongMemEval)::

    {"item_id": "q1", "history": [...], "question": "...", "answer": "...",
     "gold_keys": ["q1:3"]}

History turns: ``role`` and ``content`` are required; ``key`` (default
``<history id>:<index>``), ``timestamp`` and ``session`` are optional. Questions:
``question`` is required; ``item_id`` (required on item lines; default
``<conversation id>:<index>``), ``answer`` (text or number), ``gold_keys`` (record keys
when ``gold_match=key``, phrases a hit must contain when ``substring``),
``gold_sessions`` (session ids: a second gold granularity), ``category``, ``cluster``
(default: the history id), ``question_date`` and ``abstention`` (true: the right answer
is to abstain) are optional. Unknown fields are errors, so a typo never silently
drops gold. A template is ``conf/templates/benchmark.jsonl``.

Every error names the file, line and field (``bench.jsonl:12: questions[3].gold_keys[0]:
'c1:99' names no turn of this history``); ``memrun validate FILE`` lists them all, every
problem of a line included. The file is streamed; a line longer than
``$MEMRUN_MAX_LINE_BYTES`` (default 64 MiB) is an error naming the file, line and limit.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrun.benchmarks.text import answer_json, json_problem, json_type, jsonl_lines
from memrun.core.unique_keys import loads_json
from memrun.errors import ConfigError, DataError
from memrun.records import Dataset, GoldMatch, Group, Item, Record

CONVERSATION_FIELDS = ("conversation_id", "history", "questions")
ITEM_FIELDS = ("item_id", "history", "question", "answer", "gold_keys", "gold_sessions", "category", "cluster",
               "question_date", "abstention")
QUESTION_FIELDS = ITEM_FIELDS[:1] + ITEM_FIELDS[2:]
TURN_FIELDS = ("role", "content", "key", "timestamp", "session")
DEFAULT_CATEGORY = "uncategorized"
MAX_ERRORS = 50


class _Problems:
    """The errors found in one line, in the order met: every one is reported, as a linter
    does, not only the first (the parser adds file and line)."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, path: str, message: str) -> None:
        """Note one problem; the same problem met twice in a line (a field read by two checks) once."""
        entry = f"{path}: {message}" if path else message
        if entry not in self.found:
            self.found.append(entry)


@dataclass
class ParsedFile:
    """What :func:`parse_file` read: groups, errors (``file:line: field: problem``) and counts."""

    groups: list[Group] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    n_errors: int = 0
    sha256: str = ""

    def note(self, error: str, max_errors: int) -> None:
        """Count an error; keep its text while fewer than ``max_errors`` are kept."""
        self.n_errors += 1
        if len(self.errors) < max_errors:
            self.errors.append(error)


def parse_file(path: Path, gold_match: GoldMatch = "key", max_errors: int = MAX_ERRORS) -> ParsedFile:
    """Parse and validate a benchmark JSONL file, collecting up to ``max_errors`` errors.

    The file is streamed line by line (:func:`memrun.benchmarks.text.jsonl_lines`: strict
    UTF-8, a leading BOM dropped, split on ``\n`` only, a line longer than
    ``$MEMRUN_MAX_LINE_BYTES`` an error), so memory holds the parsed groups and one line,
    never the whole file. Every problem of a line is an error of its own
    (``file:line: field: problem``); a line with an error contributes no group. Raises
    DataError only when the file cannot be read at all.
    """
    digest = hashlib.sha256()
    out = ParsedFile()
    item_lines: dict[str, int] = {}
    history_lines: dict[str, int] = {}
    for line in jsonl_lines(path, digest):
        number, text = line.number, line.text
        if text is None:
            out.note(f"{path}:{number}: {line.error}", max_errors)
            continue
        if not text.strip() or text.lstrip().startswith("//"):
            continue
        if not out.groups and not out.n_errors and (problem := _whole_document(path, text)):
            out.n_errors, out.errors = 1, [problem]  # its other lines are no records either: one error says it
            break
        group = _line(text, gold_match, item_lines, history_lines, number)
        if isinstance(group, Group):
            out.groups.append(group)
            continue
        for problem in group:
            out.note(f"{path}:{number}: {problem}", max_errors)
    out.sha256 = digest.hexdigest()
    if not out.groups and not out.n_errors:
        out.n_errors, out.errors = 1, [f"{path}: no conversation or item lines"]
    return out


def _whole_document(path: Path, first: str) -> str | None:
    """The error for a file whose first record line is the start of one JSON document that
    spans the file (``[`` or a lone ``{``: LoCoMo, LongMemEval, a pretty-printed object),
    not JSON Lines; None for any other line (its own errors say what is wrong)."""
    head = first.strip()
    if not (head.startswith("[") or head == "{"):
        return None
    try:
        json.loads(head)
        return None  # a whole value on the line: _line says what is wrong with it
    except json.JSONDecodeError:
        pass
    return (f"{path}:1: one JSON document over many lines, not JSON Lines (an object a line), which "
            f"benchmark=jsonl reads; a LoCoMo-format file runs with benchmark=locomo benchmark.path=..., a "
            f"LongMemEval-format one with benchmark=longmemeval (memrun validate {path} tells which it is)")


MAX_DEPTH = 64
"""The deepest nesting of objects and lists a line may have (a history needs 3 or 4): deeper
lines are refused in one line, before anything recurses over them (json, the row's ``extra``)."""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests dicts and lists more than ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in node if isinstance(child, (dict, list)))
    return False


def _line(line: str, gold_match: GoldMatch, item_lines: dict[str, int], history_lines: dict[str, int],
          number: int) -> Group | list[str]:
    """The line's group, or every problem found in it."""
    try:
        obj = loads_json(line)
    except json.JSONDecodeError as exc:
        return [json_problem(exc)]
    except DataError as exc:
        return [str(exc)]
    except RecursionError:
        obj = None
    if obj is None or _deeper_than(obj, MAX_DEPTH):
        return [f"nests objects and lists deeper than {MAX_DEPTH} levels; a benchmark line needs a few"]
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {json_type(obj)}"]
    p = _Problems()
    if "questions" in obj or "conversation_id" in obj:
        _check_fields(p, "", obj, CONVERSATION_FIELDS)
        history_id = _string(p, obj, "conversation_id", "")
        questions = obj.get("questions")
        if not isinstance(questions, list) or not questions:
            p.add("questions", "must be a non-empty list of questions")
            questions = []
        entries: list[tuple[str, Any, str | None]] = [(f"questions[{i}]", q, f"{history_id}:{i}")
                                                      for i, q in enumerate(questions)]
    elif "question" in obj or "item_id" in obj:
        _check_fields(p, "", obj, ITEM_FIELDS)
        history_id = _string(p, obj, "item_id", "")
        entries = [("", obj, None)]
    else:
        return ["expected a conversation (conversation_id, history, questions) or an item (item_id, history, question)"]
    reused = history_id in history_lines
    if reused:
        p.add("", f"history id {history_id!r} already used on line {history_lines[history_id]}")
    records = _history(p, obj.get("history"), history_id)
    items = [_question(p, where, q, history_id, default_id, records, gold_match) for where, q, default_id in entries]
    seen: dict[str, str] = {}
    for (where, _, _), item in zip(entries, items):
        if item is None or (reused and item.item_id == history_id):  # an item line: said once above
            continue
        if item.item_id in item_lines:
            p.add("", f"item_id {item.item_id!r} already used on line {item_lines[item.item_id]}")
        elif item.item_id in seen:
            p.add(f"{where}.item_id", f"{item.item_id!r} already used by {seen[item.item_id]}")
        seen.setdefault(item.item_id, where)
    if p.found:
        return p.found
    history_lines[history_id] = number
    item_lines.update((item.item_id, number) for item in items if item is not None)
    return Group(history_id=history_id, records=records or [], items=[i for i in items if i is not None])


def _history(p: _Problems, turns: Any, history_id: str) -> list[Record] | None:
    """The history's records; None (with the problems added) when it is not a list of turns."""
    if not isinstance(turns, list) or not turns:
        p.add("history", "must be a non-empty list of turns")
        return None
    records: list[Record] = []
    keys: dict[str, int] = {}
    for i, turn in enumerate(turns):
        where = f"history[{i}]"
        if not isinstance(turn, dict):
            p.add(where, "expected an object with role and content")
            continue
        _check_fields(p, where, turn, TURN_FIELDS)
        role = _string(p, turn, "role", where)
        content = _string(p, turn, "content", where)
        key = _string(p, turn, "key", where, default=f"{history_id}:{i}")
        if key in keys:
            p.add(f"{where}.key", f"{key!r} repeats history[{keys[key]}].key; keys must be unique")
        keys.setdefault(key, i)
        records.append(Record(
            key=key,
            text=f"{role}: {content}",
            timestamp=_string(p, turn, "timestamp", where, default=None),
            session=_string(p, turn, "session", where, default=None),
        ))
    return records


def _question(p: _Problems, where: str, q: Any, history_id: str, default_id: str | None,
              records: Sequence[Record] | None, gold_match: GoldMatch) -> Item | None:
    """The question's item, or None when it is not an object. ``records`` None: the
    history is broken, so gold is not checked against it (that would only repeat it)."""
    if not isinstance(q, dict):
        p.add(where, "expected an object with a question")
        return None
    if default_id is not None:  # inside a conversation
        _check_fields(p, where, q, QUESTION_FIELDS)
    prefix = f"{where}." if where else ""
    item_id = _string(p, q, "item_id", where, default=default_id)
    question = _string(p, q, "question", where)
    answer = q.get("answer")
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, (str, int, float))):
        p.add(f"{prefix}answer", "must be text or a number")
    gold = _strings(p, q, "gold_keys", where)
    if gold_match == "key" and records is not None:
        known = {r.key for r in records}
        for j, key in enumerate(gold):
            if key not in known:
                p.add(f"{prefix}gold_keys[{j}]", f"{key!r} names no turn of this history")
    sessions = _strings(p, q, "gold_sessions", where)
    known_sessions = {r.session for r in records or () if r.session}
    for j, session in enumerate(sessions if records is not None else ()):
        if session not in known_sessions:
            p.add(f"{prefix}gold_sessions[{j}]", f"{session!r} names no session of this history")
    abstention = False if q.get("abstention") is None else q["abstention"]
    if not isinstance(abstention, bool):
        p.add(f"{prefix}abstention", "must be true or false")
    return Item(
        item_id=item_id,
        history_id=history_id,
        cluster=_string(p, q, "cluster", where, default=history_id),
        category=_string(p, q, "category", where, default=DEFAULT_CATEGORY),
        question=question,
        answer=None if answer is None else str(answer),
        answer_raw=answer_json(answer),
        gold_keys=tuple(dict.fromkeys(gold)),
        gold_keys_raw=tuple(gold),
        question_date=_string(p, q, "question_date", where, default=None),
        gold_sessions=tuple(dict.fromkeys(sessions)),
        abstention=abstention is True,
    )


_REQUIRED = object()


def _string(p: _Problems, obj: Mapping[str, Any], key: str, where: str, default: Any = _REQUIRED) -> Any:
    """``obj[key]`` as non-empty text, else ``default``; None (with a problem added) when
    it is required and missing, or not text."""
    path = f"{where}.{key}" if where else key
    if key not in obj or obj[key] is None:
        if default is _REQUIRED:
            p.add(path, "is required")
            return None
        return default
    value = obj[key]
    if not isinstance(value, str) or not value.strip():
        p.add(path, f"must be non-empty text, got {json.dumps(value)[:40]}")
        return None
    return value


def _strings(p: _Problems, obj: Mapping[str, Any], key: str, where: str) -> list[str]:
    path = f"{where}.{key}" if where else key
    value = [] if obj.get(key) is None else obj[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        p.add(path, "must be a list of non-empty strings")
        return []
    return value


def _check_fields(p: _Problems, where: str, obj: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for key in obj:
        if key not in allowed:
            hint = difflib.get_close_matches(key, allowed, n=1)
            did_you_mean = f"did you mean '{hint[0]}'? " if hint else ""
            path = f"{where}.{key}" if where else key
            p.add(path, f"unknown field; {did_you_mean}fields here: {', '.join(allowed)}")


class JsonlBenchmark:
    """Loader for a benchmark in memrun's JSONL format (see the module docstring).

    path: the file. split: its name in the instrument (default: the file's stem).
    gold_match: ``key`` or ``substring``. categories: raw category -> label, in
    report order. comparable_categories: the headline subset ([]: all).
    task_averaged: also report the mean over categories.
    """

    def __init__(
        self,
        *,
        path: str | None,
        split: str | None = None,
        gold_match: str = "key",
        categories: Mapping[str, str] | None = None,
        comparable_categories: Sequence[str] = (),
        task_averaged: bool = False,
    ) -> None:
        if not path:
            raise ConfigError("benchmark=jsonl needs benchmark.path=FILE, a .jsonl file (see docs/benchmarks.md)")
        if gold_match not in ("key", "substring"):
            raise ConfigError(f"benchmark.gold_match={gold_match}: use key or substring")
        self.path = Path(path).expanduser()
        self.split = split or self.path.stem
        self.gold_match: GoldMatch = gold_match  # type: ignore[assignment]
        self.categories = {str(k): str(v) for k, v in (categories or {}).items()}
        self.comparable = [str(c) for c in comparable_categories] or None
        self.task_averaged = task_averaged

    def load(self, data_dir: Path) -> Dataset:
        """Parse and validate the whole file. Raises DataError naming the first error's line and field."""
        if not self.path.is_file():
            raise DataError(f"benchmark.path={self.path}: no such file")
        parsed = parse_file(self.path, self.gold_match, max_errors=1)
        if parsed.n_errors:
            more = f" (and {parsed.n_errors - 1} more; memrun validate {self.path} lists them)" if parsed.n_errors > 1 else ""
            raise DataError(parsed.errors[0] + more)
        return Dataset(
            split=self.split,
            sha256=parsed.sha256,
            groups=parsed.groups,
            categories=self.categories,
            comparable_categories=self.comparable,
            gold_match=self.gold_match,
            task_averaged=self.task_averaged,
        )
