"""``arm=answers_file``: answers a team already produced, to be judged without re-running.

Two formats (``format=auto`` picks by the path):

- LongMemEval hypothesis JSONL (``*.jsonl``, ``*.json``): one JSON object per line with
  ``question_id`` and ``hypothesis`` (the format of LongMemEval's ``evaluate_qa.py``);
  other fields are ignored; blank lines are skipped.
- Parquet (``*.parquet``, or a memrun run folder): column ``item_id`` plus the answer
  column (``answer_column``, default ``hypothesis``), and ``repeat`` when present. In a
  memrun run table ``answer`` is the gold answer, so it is refused as the answer column.

Ids are matched to :attr:`memrun.records.Item.item_id`. The arm retrieves nothing
(``search`` returns no hits; ``describe`` says ``search_mode=none``, so the run refuses
``axis=recall`` in one line, scores no retrieval and blames no retrieval stage); the
accuracy axis asks :meth:`AnswersFileArm.answer_for` instead of calling a reader, and
reports the answer coverage and the ids naming no item (:meth:`AnswersFileArm.unknown_ids`;
below the run's ``min_coverage`` the headline is partial and the run exits 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.benchmarks.download import sha256_of
from memrun.benchmarks.text import jsonl_lines
from memrun.core.instrument import METADATA_KEY
from memrun.core.unique_keys import loads_json
from memrun.errors import ArmError, DataError, MemrunError
from memrun.lazy import lazy
from memrun.records import Hit, Item, Record

if TYPE_CHECKING:
    from memrun.io import reader as io_reader
else:
    io_reader = lazy("memrun.io.reader")

FORMATS = ("auto", "jsonl", "parquet")
Answers = dict[tuple[str, int], str]


def load_jsonl(path: Path, id_field: str = "question_id", answer_field: str = "hypothesis") -> Answers:
    """Answers keyed by (id, repeat 0) from a hypothesis JSONL file, streamed (strict UTF-8,
    a BOM allowed, lines split on ``\n`` only, a line longer than ``$MEMRUN_MAX_LINE_BYTES``
    an error: :func:`memrun.benchmarks.text.jsonl_lines`).

    Raises DataError naming ``path:line`` for a line that is not UTF-8 or not a JSON
    object, lacks either field, has an id that is not text or an integer, has a non-text
    answer, or repeats an id.
    """
    answers: Answers = {}
    for line in jsonl_lines(path):
        where = f"{path}:{line.number}"
        if line.text is None:
            raise DataError(f"{where}: {line.error}")
        if not line.text.strip():
            continue
        try:
            obj = loads_json(line.text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not a JSON object ({exc.msg}); expected one object per line") from exc
        except DataError as exc:
            raise DataError(f"{where}: {exc}") from exc
        if not isinstance(obj, dict) or id_field not in obj or answer_field not in obj:
            raise DataError(f"{where}: expected an object with '{id_field}' and '{answer_field}'")
        item_id = obj[id_field]
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or item_id == "":
            raise DataError(f"{where}: '{id_field}' is {json.dumps(item_id)[:40]}, expected text (or an integer)")
        if not isinstance(obj[answer_field], str):
            raise DataError(f"{where}: '{answer_field}' is {type(obj[answer_field]).__name__}, expected text")
        key = (str(item_id), 0)
        if key in answers:
            raise DataError(f"{where}: {id_field} {key[0]!r} appears twice; keep one answer per question")
        answers[key] = obj[answer_field]
    return answers


def _read_table(path: Path) -> pa.Table:
    if path.is_dir():
        try:
            return io_reader.read_run(path).table
        except MemrunError as exc:
            raise DataError(str(exc)) from exc
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc


def load_parquet(path: Path, id_column: str = "item_id", answer_column: str = "hypothesis") -> Answers:
    """Answers keyed by (item_id, repeat) from a Parquet file or memrun run folder.

    Null answers are left out (the item then has no answer); numbers are kept as text.
    Raises DataError for a missing column, the gold ``answer`` column of a memrun table,
    an id that is null or not text/an integer, a repeat that is not an integer, an answer
    that is a list or a struct, or a repeated key.
    """
    table = _read_table(path)
    is_run_table = METADATA_KEY in (table.schema.metadata or {})
    if is_run_table and answer_column == "answer":
        raise DataError(
            f"{path}: 'answer' is the gold answer in a memrun run table; set arm.answer_column "
            "to the column holding the system's answers"
        )
    missing = [c for c in (id_column, answer_column) if c not in table.column_names]
    if missing:
        raise DataError(
            f"{path}: no column {', '.join(repr(c) for c in missing)}; columns: {', '.join(table.column_names)} "
            "(set arm.id_column / arm.answer_column)"
        )
    ids = table.column(id_column).to_pylist()
    texts = table.column(answer_column).to_pylist()
    repeats = table.column("repeat").to_pylist() if "repeat" in table.column_names else [0] * len(ids)
    answers: Answers = {}
    for row, (item_id, repeat, text) in enumerate(zip(ids, repeats, texts)):
        where = f"{path}: row {row}"
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or item_id == "":
            raise DataError(f"{where}: {id_column} is {item_id!r:.40}, expected text (or an integer)")
        if isinstance(repeat, bool) or not isinstance(repeat, (int, type(None))):
            raise DataError(f"{where}: repeat is {repeat!r:.40}, expected an integer")
        if text is not None and (isinstance(text, bool) or not isinstance(text, (str, int, float))):
            raise DataError(f"{where}: {answer_column} is {type(text).__name__}, expected text")
        key = (str(item_id), int(repeat or 0))
        if key in answers:
            raise DataError(f"{where}: {id_column} {key[0]!r} repeat {key[1]} appears twice")
        if text is not None:
            answers[key] = str(text)
    return answers


class AnswersFileArm:
    """Serves answers from a file (see the module docstring).

    path: the file or run folder. format: ``auto`` | ``jsonl`` | ``parquet``.
    id_column, answer_column: field names (None: ``question_id``/``hypothesis`` for
    JSONL, ``item_id``/``hypothesis`` for Parquet).
    Raises DataError for a missing or malformed file, ArmError for a bad format.
    """

    def __init__(self, *, path: str, format: str = "auto", id_column: str | None = None,
                 answer_column: str | None = None) -> None:
        if format not in FORMATS:
            raise ArmError(f"arm.format={format!r}: use {', '.join(FORMATS)}")
        self.path = Path(path).expanduser()
        if not self.path.exists():
            raise DataError(f"arm.path={path}: no such file or folder")
        if format == "auto":
            format = "parquet" if self.path.is_dir() or self.path.suffix == ".parquet" else "jsonl"
        self.format = format
        answer = answer_column or "hypothesis"
        if format == "jsonl":
            self.answers = load_jsonl(self.path, id_column or "question_id", answer)
        else:
            self.answers = load_parquet(self.path, id_column or "item_id", answer)
        self.sha256 = sha256_of(self.path) if self.path.is_file() else None

    def answer_for(self, item: Item, repeat: int = 0) -> str | None:
        """The file's answer to ``item`` (for ``repeat``), None when it has none."""
        return self.answers.get((item.item_id, repeat))

    def coverage(self, items: Iterable[Item]) -> dict[str, int]:
        """``matched``: items with an answer; ``missing``: items without; ``unused``:
        answers (repeat 0) naming no item of ``items`` (a different split or id scheme)."""
        ids = {item.item_id for item in items}
        answered = {key for key, repeat in self.answers if repeat == 0}
        return {"matched": len(ids & answered), "missing": len(ids - answered), "unused": len(answered - ids)}

    def unknown_ids(self, item_ids: Iterable[str]) -> list[str]:
        """The file's ids (any repeat) naming none of ``item_ids``, sorted.

        item_ids: every item id of the benchmark, before any slice (answers for items
        a slice left out are expected, not unknown). The run reports them.
        """
        known = set(item_ids)
        return sorted({key for key, _ in self.answers if key not in known})

    def describe(self) -> dict[str, Any]:
        """``search_mode=none`` (the run refuses ``axis=recall``) and the file's identity."""
        return {"search_mode": "none", "answers_path": str(self.path), "answers_sha256": self.sha256}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        """Nothing to ingest: the answers exist already."""

    def search(self, query: str, k: int) -> list[Hit]:
        """Nothing to retrieve: no hits (the accuracy axis then takes :meth:`answer_for`)."""
        return []

    def close(self) -> None:
        """Nothing to release."""
