"""Gold corrections: a file that fixes known errors in a benchmark's published gold.

``benchmark.corrections=FILE`` names a YAML (or JSON) mapping from item id to one
correction, each with a ``reason``::

    "conv-26:12":                      # replace the gold answer
      answer: "7 May 2023"
      reason: "the session is dated 8 May; the event was the day before"
    "gpt4_2655b836":                   # replace retrieval gold (record keys / sessions)
      gold_keys: [answer_4be1b6b4_2_1]
      gold_sessions: [answer_4be1b6b4_2]
      reason: "the evidence turn is the first one"
    "0a995998":                        # knowledge-update: the superseded value
      superseded_answer: "two"
      reason: "annotated for stale_check"
    "e47becba_abs":                    # drop the item
      drop: true
      reason: "the question is ambiguous"

Corrections apply at load time, before slicing, to the normalized items. The file's
sha256 goes into the instrument (``corrections_sha256``), so runs scored against
different gold do not compare. Item ids the dataset does not hold are counted
(``corrections_unmatched``), not an error: one file may serve several splits.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memrun.benchmarks.text import answer_json, decode_strict
from memrun.core.unique_keys import load_yaml, loads_json
from memrun.errors import ConfigError, DataError
from memrun.metrics.stale import SUPERSEDED_KEY
from memrun.records import Item

FIELDS = ("answer", "gold_keys", "gold_sessions", SUPERSEDED_KEY, "drop", "reason")


@dataclass(frozen=True)
class Correction:
    """One item's correction: replacements (None: unchanged) or a drop, and why."""

    reason: str
    drop: bool = False
    answer: str | int | float | None = None
    gold_keys: tuple[str, ...] | None = None
    gold_sessions: tuple[str, ...] | None = None
    superseded_answer: str | None = None

    def apply(self, item: Item) -> Item:
        """The corrected item (``extra["correction"]`` holds the reason). Not for drops."""
        changes: dict[str, Any] = {"extra": {**item.extra, "correction": self.reason}}
        if self.answer is not None:
            changes["answer"] = str(self.answer)
            changes["answer_raw"] = answer_json(self.answer)
            changes["extra"]["answer_published"] = item.answer_raw
        if self.gold_keys is not None:
            changes["gold_keys"] = self.gold_keys
        if self.gold_sessions is not None:
            changes["gold_sessions"] = self.gold_sessions
        if self.superseded_answer is not None:
            changes["extra"][SUPERSEDED_KEY] = self.superseded_answer
        return dataclasses.replace(item, **changes)


@dataclass(frozen=True)
class Corrections:
    """A parsed corrections file: item id -> Correction, and the file's sha256."""

    path: Path
    sha256: str
    by_id: Mapping[str, Correction]


def load_corrections(path: str | Path) -> Corrections:
    """Parse and validate a corrections file.

    The file is strict UTF-8 (a BOM is accepted); ``*.json`` is read as JSON, anything
    else as YAML. Raises DataError for bytes that are not UTF-8 and ConfigError (one
    line, naming the file, the item id and the field) for a missing or unparseable file, an id that is not a string, an unknown field, a
    missing reason, a correction that changes nothing, or a drop combined with a
    replacement.
    """
    path = Path(path).expanduser()
    where = f"benchmark.corrections={path}"
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the file ({exc.strerror or exc})") from exc
    text = decode_strict(blob, path)
    if path.suffix.lower() == ".json":  # YAML would fold U+0085 in a string into a space
        try:
            data = loads_json(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON at line {exc.lineno} ({exc.msg})") from exc
        except DataError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    else:
        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
            raise ConfigError(f"{where}: not valid YAML/JSON{at} ({problem})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping from item id to a correction")
    by_id = {}
    for item_id, entry in data.items():
        if not isinstance(item_id, str):
            raise ConfigError(f"{where}: item id {item_id!r} is not a string; quote it")
        by_id[item_id] = _correction(f"{where}: item {item_id!r}", entry)
    return Corrections(path=path, sha256=hashlib.sha256(blob).hexdigest(), by_id=by_id)


def _correction(where: str, entry: Any) -> Correction:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping with a reason and what to change")
    for key in entry:
        if key not in FIELDS:
            hint = difflib.get_close_matches(str(key), FIELDS, n=1)
            did_you_mean = f"did you mean '{hint[0]}'? " if hint else ""
            raise ConfigError(f"{where}: unknown field '{key}'; {did_you_mean}fields: {', '.join(FIELDS)}")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigError(f"{where}: 'reason' is missing; say why the published gold is wrong")
    changes = [k for k in FIELDS[:-2] if entry.get(k) is not None]
    drop = False if entry.get("drop") is None else entry["drop"]
    if not isinstance(drop, bool):
        raise ConfigError(f"{where}: 'drop' must be true or false")
    if drop and changes:
        raise ConfigError(f"{where}: 'drop: true' with {', '.join(changes)}; a dropped item needs no replacement")
    if not drop and not changes:
        raise ConfigError(f"{where}: changes nothing; give answer, gold_keys, gold_sessions, {SUPERSEDED_KEY} or drop")
    answer = entry.get("answer")
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, (str, int, float))):
        raise ConfigError(f"{where}: 'answer' must be a string or a number")
    superseded = entry.get(SUPERSEDED_KEY)
    if superseded is not None and (isinstance(superseded, bool) or not isinstance(superseded, (str, int, float))):
        raise ConfigError(f"{where}: '{SUPERSEDED_KEY}' must be a string or a number")
    return Correction(
        reason=reason.strip(),
        drop=drop,
        answer=answer,
        gold_keys=_keys(where, entry, "gold_keys"),
        gold_sessions=_keys(where, entry, "gold_sessions"),
        superseded_answer=None if superseded is None else str(superseded),
    )


def _keys(where: str, entry: Mapping[str, Any], field: str) -> tuple[str, ...] | None:
    value = entry.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise ConfigError(f"{where}: '{field}' must be a list of ids")
    return tuple(dict.fromkeys(str(v) for v in value))
