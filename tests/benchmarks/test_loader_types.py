"""Every loader x every field x every JSON type: a field of a type with no reading is one
``memrun: error:`` line (exit 2, no traceback, no run folder); a type with one obvious
reading keeps the loader's documented normalization (and its count).

Each case is checked on the loader itself (raises a one-line MemrunError from ``load``,
before anything runs, or loads and streams without error); one failing case per loader
also goes through the command line in-process, to check the one-line contract end to end.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import DATE, question, turn
from memrun.arms.answers_file import load_jsonl, load_parquet
from memrun.benchmarks.corrections import load_corrections
from memrun.benchmarks.jsonl import JsonlBenchmark
from memrun.benchmarks.locomo import LoCoMo
from memrun.benchmarks.longmemeval import LongMemEval
from memrun.cli import main
from memrun.errors import MemrunError

TYPES = {"null": None, "number": 7, "string": "text", "list": ["x"], "object": {"k": "v"}}
Setter = Callable[[Any, Any], None]


def at(*path: Any) -> Setter:
    """A setter of the value at ``path`` (keys and list indexes) inside a document."""
    def set_(doc: Any, value: Any) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return set_


# -- the documents: one valid file per loader -----------------------------------------

def locomo_doc() -> Any:
    return [{"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1 May 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat", "blip_caption": "a cat"},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "what is it called"}]},
        "qa": [{"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 1},
               {"question": "What did Ben adopt?", "adversarial_answer": "a dog", "evidence": ["D1:2"], "category": 5}]}]


def lme_doc() -> Any:
    return [question("q1", [("s1", DATE, [turn("user", "my car is blue", True), turn("assistant", "nice")])], ["s1"],
                     superseded_answer="red")]


def jsonl_doc() -> Any:
    return {"conversation_id": "c1", "history": [
        {"role": "user", "content": "my car is blue", "key": "c1:0", "timestamp": "2024-05-01", "session": "s1"},
        {"role": "assistant", "content": "nice", "key": "c1:1", "timestamp": "2024-05-01", "session": "s2"}],
        "questions": [{"item_id": "c1:q0", "question": "What colour is my car?", "answer": "blue",
                       "gold_keys": ["c1:0"], "gold_sessions": ["s1"], "category": "single-hop", "cluster": "c1",
                       "question_date": "2024-05-02", "abstention": False}]}


def corrections_doc() -> Any:
    return {"conv-1:0": {"answer": "a grey cat", "gold_keys": ["D1:1"], "gold_sessions": ["session_1"],
                         "superseded_answer": "a dog", "reason": "the caption says grey"},
            "conv-1:1": {"drop": True, "reason": "ambiguous"}}


def answers_doc() -> Any:
    return {"question_id": "q1", "hypothesis": "blue"}


# -- loading one document --------------------------------------------------------------

def load_locomo(path: Path) -> Any:
    loader = LoCoMo(split="locomo10", file=path.name, url=None, sha256=None, path=str(path),
                    categories={1: "multi-hop", 5: "adversarial"})
    return loader.load(path.parent)


def load_lme(path: Path) -> Any:
    return LongMemEval(split="s", files={"s": {"file": path.name}}, categories={}, path=str(path)).load(path.parent)


LOADERS: dict[str, tuple[Callable[[], Any], str, Callable[[Path], Any]]] = {
    "locomo": (locomo_doc, "data.json", load_locomo),
    "longmemeval": (lme_doc, "data.json", load_lme),
    "jsonl": (jsonl_doc, "data.jsonl", lambda p: JsonlBenchmark(path=str(p)).load(p.parent)),
    "corrections": (corrections_doc, "fix.json", load_corrections),
    "answers": (answers_doc, "answers.jsonl", load_jsonl),
}

# loader -> field -> (setter, the types it accepts). A type not listed must be an error.
FIELDS: dict[str, dict[str, tuple[Setter, set[str]]]] = {
    "locomo": {
        "file": (None, set()),  # the whole document; ["x"]: a conversation that is not an object
        "conversation entry": (at(0), set()),  # {"k": "v"}: no 'conversation'
        "sample_id": (at(0, "sample_id"), {"null", "number", "string"}),  # null: conv-<n>; number: as text
        "conversation": (at(0, "conversation"), {"object"}),
        "session_1": (at(0, "conversation", "session_1"), {"null"}),  # null: an empty session; ["x"]: no turn
        "session_1_date_time": (at(0, "conversation", "session_1_date_time"), {"null", "string"}),
        "turn": (at(0, "conversation", "session_1", 0), {"object"}),
        "speaker": (at(0, "conversation", "session_1", 0, "speaker"), {"null", "number", "string"}),
        "dia_id": (at(0, "conversation", "session_1", 0, "dia_id"), {"null", "string"}),  # null: counted
        "text": (at(0, "conversation", "session_1", 0, "text"), {"null", "number", "string"}),
        "blip_caption": (at(0, "conversation", "session_1", 0, "blip_caption"), {"null", "number", "string"}),
        "qa": (at(0, "qa"), set()),  # ["x"]: a row that is not an object
        "qa row": (at(0, "qa", 0), set()),  # {"k": "v"}: no question
        "question": (at(0, "qa", 0, "question"), {"string"}),
        "answer": (at(0, "qa", 0, "answer"), {"null", "number", "string"}),  # null, number: counted
        "evidence": (at(0, "qa", 0, "evidence"), {"null", "string", "list"}),  # a string: one id
        "evidence[0]": (at(0, "qa", 0, "evidence", 0), {"string"}),
        "category": (at(0, "qa", 0, "category"), {"null", "number", "string"}),  # null: counted
        "adversarial_answer": (at(0, "qa", 1, "adversarial_answer"), {"null", "number", "string"}),
    },
    "longmemeval": {
        "file": (None, set()),  # ["x"]: a question that is not an object
        "question entry": (at(0), set()),  # {"k": "v"}: no question_id
        "question_id": (at(0, "question_id"), {"string"}),
        "question_type": (at(0, "question_type"), {"string"}),
        "question": (at(0, "question"), {"string"}),
        "answer": (at(0, "answer"), {"number", "string"}),  # a number: counted, as text
        "question_date": (at(0, "question_date"), {"null", "string"}),
        "haystack_session_ids": (at(0, "haystack_session_ids"), {"list"}),
        "haystack_session_ids[0]": (at(0, "haystack_session_ids", 0), {"number", "string"}),
        "haystack_dates": (at(0, "haystack_dates"), {"list"}),
        "haystack_dates[0]": (at(0, "haystack_dates", 0), {"null", "string"}),
        "haystack_sessions": (at(0, "haystack_sessions"), set()),  # ["x"]: a session that is not a list
        "haystack_sessions[0]": (at(0, "haystack_sessions", 0), set()),  # ["x"]: a turn that is not an object
        "turn": (at(0, "haystack_sessions", 0, 0), set()),  # {"k": "v"}: no role
        "role": (at(0, "haystack_sessions", 0, 0, "role"), {"string"}),
        "content": (at(0, "haystack_sessions", 0, 0, "content"), {"string"}),
        "has_answer": (at(0, "haystack_sessions", 0, 0, "has_answer"), {"null"}),  # and booleans
        "answer_session_ids": (at(0, "answer_session_ids"), {"list"}),
        "answer_session_ids[0]": (at(0, "answer_session_ids", 0), {"number", "string"}),
        "superseded_answer": (at(0, "superseded_answer"), {"null", "number", "string"}),
    },
    "jsonl": {
        "line": (None, set()),  # {"k": "v"} is neither a conversation nor an item
        "conversation_id": (at("conversation_id"), {"string"}),
        "history": (at("history"), set()),  # ["x"]: a turn that is not an object
        "history[0]": (at("history", 0), set()),  # {"k": "v"}: an unknown field
        "role": (at("history", 1, "role"), {"string"}),
        "content": (at("history", 1, "content"), {"string"}),
        "key": (at("history", 1, "key"), {"null", "string"}),  # null: <history id>:<index>
        "timestamp": (at("history", 1, "timestamp"), {"null", "string"}),
        "session": (at("history", 1, "session"), {"null", "string"}),
        "questions": (at("questions"), set()),  # ["x"]: a question that is not an object
        "questions[0]": (at("questions", 0), set()),  # {"k": "v"}: an unknown field
        "item_id": (at("questions", 0, "item_id"), {"null", "string"}),
        "question": (at("questions", 0, "question"), {"string"}),
        "answer": (at("questions", 0, "answer"), {"null", "number", "string"}),
        "gold_keys": (at("questions", 0, "gold_keys"), {"null"}),  # ["x"] names no turn
        "gold_keys[0]": (at("questions", 0, "gold_keys", 0), set()),  # "text" names no turn
        "gold_sessions": (at("questions", 0, "gold_sessions"), {"null"}),  # ["x"] names no session
        "category": (at("questions", 0, "category"), {"null", "string"}),
        "cluster": (at("questions", 0, "cluster"), {"null", "string"}),
        "question_date": (at("questions", 0, "question_date"), {"null", "string"}),
        "abstention": (at("questions", 0, "abstention"), {"null"}),  # and booleans
    },
    "corrections": {
        "file": (None, set()),  # {"k": "v"}: a correction that is not an object
        "entry": (at("conv-1:0"), set()),  # {"k": "v"}: an unknown field
        "answer": (at("conv-1:0", "answer"), {"null", "number", "string"}),
        "gold_keys": (at("conv-1:0", "gold_keys"), {"null", "list"}),
        "gold_keys[0]": (at("conv-1:0", "gold_keys", 0), {"number", "string"}),
        "gold_sessions": (at("conv-1:0", "gold_sessions"), {"null", "list"}),
        "superseded_answer": (at("conv-1:0", "superseded_answer"), {"null", "number", "string"}),
        "drop": (at("conv-1:1", "drop"), set()),  # null: not dropped, and then nothing changes
        "reason": (at("conv-1:0", "reason"), {"string"}),
    },
    "answers": {
        "line": (None, set()),  # {"k": "v"}: no question_id
        "question_id": (at("question_id"), {"number", "string"}),  # a number: as text
        "hypothesis": (at("hypothesis"), {"string"}),
    },
}

CASES = [(loader, field, kind) for loader, fields in FIELDS.items() for field in fields for kind in TYPES]


def write(loader: str, field: str, kind: str, folder: Path) -> Path:
    make, name, _ = LOADERS[loader]
    setter = FIELDS[loader][field][0]
    doc = make()
    if setter is None:
        doc = copy.deepcopy(TYPES[kind])
    else:
        setter(doc, copy.deepcopy(TYPES[kind]))
    path = folder / name
    path.write_text(json.dumps(doc) + ("\n" if name.endswith(".jsonl") else ""), encoding="utf-8")
    return path


@pytest.mark.parametrize(("loader", "field", "kind"), CASES, ids=[f"{a}-{b}-{c}" for a, b, c in CASES])
def test_each_field_of_each_type(tmp_path: Path, loader: str, field: str, kind: str) -> None:
    path = write(loader, field, kind, tmp_path)
    load = LOADERS[loader][2]
    if kind in FIELDS[loader][field][1]:
        loaded = load(path)  # accepted: a documented normalization
        list(getattr(loaded, "groups", ()))  # LongMemEval streams: that must not fail either
        return
    with pytest.raises(MemrunError) as err:
        load(path)  # before anything runs (LongMemEval: before a question is streamed)
    message = str(err.value)
    assert message and "\n" not in message and str(path.name) in message, message


def test_the_documented_normalizations_keep_their_counts(tmp_path: Path) -> None:
    counts = {}
    for field, kind in (("answer", "number"), ("answer", "null"), ("category", "null"), ("evidence", "string")):
        counts[field, kind] = load_locomo(write("locomo", field, kind, tmp_path)).counts
    assert counts["answer", "number"]["answer_int"] == 1 and counts["answer", "null"]["answer_missing"] == 2
    assert counts["category", "null"]["category_missing"] == 1
    assert counts["evidence", "string"]["evidence_unparseable"] == 1  # "text" is one (unreadable) id
    dataset = load_lme(write("longmemeval", "answer", "number", tmp_path))
    list(dataset.groups)
    assert dataset.counts["answer_int"] == 1
    adversarial = load_locomo(write("locomo", "adversarial_answer", "null", tmp_path))
    assert "adversarial_answer" not in adversarial.groups[0].items[1].extra  # null is absent, not "None"


def test_answers_parquet_columns_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "answers.parquet"
    good = {"item_id": ["q1", "q2"], "hypothesis": ["blue", None], "repeat": [0, 0]}
    pq.write_table(pa.table(good), path)
    assert load_parquet(path) == {("q1", 0): "blue"}
    for column, values, message in (("item_id", [None, "q2"], "item_id is None"),
                                    ("item_id", [["a"], ["b"]], "item_id is \\['a'\\]"),
                                    ("repeat", ["a", "b"], "repeat is 'a'"),
                                    ("hypothesis", [{"k": "v"}, None], "hypothesis is dict")):
        pq.write_table(pa.table({**good, column: values}), path)
        with pytest.raises(MemrunError, match=f"row 0: {message}"):
            load_parquet(path)


# -- end to end: one failing case per loader through the command line ------------------

CLI = {
    "locomo": ("evidence", "number", ["benchmark=locomo", "benchmark.path={path}", "benchmark.expected_counts=null"]),
    "longmemeval": ("content", "list", ["benchmark=longmemeval", "benchmark.path={path}"]),
    "jsonl": ("gold_keys", "object", ["benchmark=jsonl", "benchmark.path={path}"]),
    "corrections": ("gold_keys", "string", ["benchmark.corrections={path}"]),
    "answers": ("hypothesis", "list", ["axis=accuracy", "judge=exact", "arm=answers_file", "arm.path={path}"]),
}


@pytest.mark.parametrize("loader", list(CLI))
def test_the_command_line_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], loader: str) -> None:
    field, kind, args = CLI[loader]
    path = write(loader, field, kind, tmp_path)
    out = tmp_path / "run"
    rc = main([*(a.format(path=path) for a in args), "progress=false", f"hydra.run.dir={out}",
               f"cache_dir={tmp_path / 'cache'}"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("memrun: error: "), err
    assert "Traceback" not in err and not out.exists()
