"""arm=answers_file: LongMemEval hypothesis JSONL and Parquet answers, and their errors."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arms.support import run_in_process
from memrun.arms.answers_file import AnswersFileArm
from memrun.core.instrument import METADATA_KEY, Instrument
from memrun.errors import ConfigError, DataError
from memrun.records import Item


def item(item_id: str) -> Item:
    return Item(item_id, "h", "h", "1", "q?", "gold", '"gold"', ())


def test_longmemeval_jsonl(tmp_path) -> None:
    path = tmp_path / "hyp.jsonl"
    path.write_text('{"question_id": "q1", "hypothesis": "Lisbon", "autoeval_label": {"label": true}}\n\n'
                    '{"question_id": 7, "hypothesis": ""}\n')
    arm = AnswersFileArm(path=str(path))
    assert arm.format == "jsonl"
    assert arm.answer_for(item("q1")) == "Lisbon" and arm.answer_for(item("7")) == ""
    assert arm.answer_for(item("q2")) is None
    assert arm.coverage([item("q1"), item("q2")]) == {"matched": 1, "missing": 1, "unused": 1}
    assert arm.describe()["answers_sha256"] and arm.describe()["answers_path"] == str(path)
    assert arm.search("q?", 10) == [] and arm.describe()["search_mode"] == "none"


@pytest.mark.parametrize("content, message", [
    ('{"question_id": "q1", "hypothesis": "a"}\n{"question_id": "q1", "hypothesis": "b"}\n',
     r"hyp.jsonl:2: question_id 'q1' appears twice"),
    ('{"question_id": "q1", "hypothesis": "a"}\nnot json\n', r"hyp.jsonl:2: not a JSON object"),
    ('{"question_id": "q1", "answer": "a"}\n', r"hyp.jsonl:1: expected an object with 'question_id' and 'hypothesis'"),
    ('{"question_id": "q1", "hypothesis": ["a"]}\n', r"hyp.jsonl:1: 'hypothesis' is list, expected text"),
    ('{"question_id": "q1", "hypothesis": "a", "hypothesis": "b"}\n', r"hyp.jsonl:1: key 'hypothesis' is given twice"),
])
def test_malformed_jsonl_names_file_and_line(tmp_path, content, message) -> None:
    path = tmp_path / "hyp.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=message) as info:
        AnswersFileArm(path=str(path))
    assert "\n" not in str(info.value)


def test_parquet_answers_with_repeats(tmp_path) -> None:
    path = tmp_path / "answers.parquet"
    pq.write_table(pa.table({"item_id": ["a", "a", "b"], "repeat": [0, 1, 0], "hypothesis": ["x", "y", None]}), path)
    arm = AnswersFileArm(path=str(path))
    assert arm.answer_for(item("a")) == "x" and arm.answer_for(item("a"), repeat=1) == "y"
    assert arm.answer_for(item("b")) is None  # a null answer is no answer
    custom = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"qid": ["a"], "response": ["z"]}), custom)
    assert AnswersFileArm(path=str(custom), id_column="qid", answer_column="response").answer_for(item("a")) == "z"
    with pytest.raises(DataError, match=r"no column 'hypothesis'; columns: qid, response"):
        AnswersFileArm(path=str(custom), id_column="qid")


def test_the_gold_column_of_a_run_table_is_refused(tmp_path) -> None:
    path = tmp_path / "items.parquet"
    table = pa.table({"item_id": ["a"], "repeat": [0], "answer": ["gold"]})
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: Instrument().to_json().encode()}), path)
    with pytest.raises(DataError, match="'answer' is the gold answer in a memrun run table"):
        AnswersFileArm(path=str(path), answer_column="answer")


def test_a_retrieval_run_stops_in_one_line(tmp_path) -> None:
    path = tmp_path / "hyp.jsonl"
    path.write_text('{"question_id": "q1", "hypothesis": "a"}\n')
    with pytest.raises(ConfigError, match="arm=answers_file retrieves nothing .*: run it with axis=accuracy"):
        run_in_process(["arm=answers_file", f"arm.path={path}"], tmp_path / "run")
