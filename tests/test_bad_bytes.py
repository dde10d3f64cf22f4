"""Bytes that are not UTF-8, a byte-order mark, and line separators inside JSON strings,
in every file memrun reads: JSONL benchmarks, answers files, LoCoMo, LongMemEval, corrections."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from helpers import DATE, loader, question, turn, write_lme
from memrun.arms.answers_file import load_jsonl
from memrun.benchmarks.corrections import load_corrections
from memrun.benchmarks.jsonl import JsonlBenchmark, parse_file
from memrun.benchmarks.locomo import LoCoMo
from memrun.cli import main
from memrun.errors import DataError

BOM = codecs.BOM_UTF8
# Characters str.splitlines() breaks on that a JSON string may hold unescaped.
SEPARATORS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c"


def item_line(item_id: str, content: str) -> bytes:
    return json.dumps({"item_id": item_id, "history": [{"role": "user", "content": content}],
                       "question": "what?", "answer": "x"}, ensure_ascii=False).encode()


def test_jsonl_refuses_bytes_that_are_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bench.jsonl"
    first = item_line("a", "fine")
    path.write_bytes(first + b"\n" + item_line("b", "caf\xe9").replace(b"\xc3\xa9", b"\xe9") + b"\n")  # Latin-1
    bad = path.read_bytes().index(b"\xe9")
    parsed = parse_file(path)
    assert parsed.errors == [f"{path}:2: invalid UTF-8 at byte {bad}"] and len(parsed.groups) == 1
    with pytest.raises(DataError, match=rf"bench.jsonl:2: invalid UTF-8 at byte {bad}$"):
        JsonlBenchmark(path=str(path)).load(tmp_path)
    assert main(["validate", str(path)]) == 2  # it used to say "valid"
    captured = capsys.readouterr()
    assert f"{path}:2: invalid UTF-8 at byte {bad}" in captured.out and "1 error" in captured.err


def test_jsonl_accepts_a_bom_and_keeps_separators_inside_strings(tmp_path: Path) -> None:
    path = tmp_path / "bench.jsonl"
    path.write_bytes(BOM + item_line("a", f"one{SEPARATORS}line") + b"\r\n" + item_line("b", "two") + b"\n")
    parsed = parse_file(path)
    assert parsed.errors == [] and [g.history_id for g in parsed.groups] == ["a", "b"]
    assert parsed.groups[0].records[0].text == f"user: one{SEPARATORS}line"


def test_answers_jsonl_reads_strictly_and_splits_on_newlines_only(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    lines = [json.dumps({"question_id": "q1", "hypothesis": f"a{SEPARATORS}b"}, ensure_ascii=False).encode(),
             json.dumps({"question_id": "q2", "hypothesis": "c"}).encode()]
    path.write_bytes(BOM + b"\n".join(lines) + b"\n")
    assert load_jsonl(path) == {("q1", 0): f"a{SEPARATORS}b", ("q2", 0): "c"}
    path.write_bytes(lines[1] + b"\n" + lines[0].replace(b'"a', b'"\xff', 1) + b"\n")
    bad = path.read_bytes().index(b"\xff")
    with pytest.raises(DataError, match=rf"answers.jsonl:2: invalid UTF-8 at byte {bad}$"):
        load_jsonl(path)


def locomo(path: Path) -> LoCoMo:
    return LoCoMo(split="locomo10", file=path.name, url=None, sha256=None, path=str(path), categories={1: "x"})


def test_locomo_accepts_a_bom_and_names_bad_bytes(tmp_path: Path) -> None:
    doc = [{"sample_id": "c", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "caf\u00e9"}]},
            "qa": [{"question": "q?", "answer": "x", "evidence": ["D1:1"], "category": 1}]}]
    path = tmp_path / "locomo.json"
    blob = json.dumps(doc, ensure_ascii=False, indent=1).encode()
    path.write_bytes(BOM + blob)
    assert locomo(path).load(tmp_path).groups[0].records[0].text == "A: caf\u00e9"
    path.write_bytes(blob.replace("\u00e9".encode(), b"\xe9"))
    bad = path.read_bytes().index(b"\xe9")
    line = path.read_bytes()[:bad].count(b"\n") + 1
    with pytest.raises(DataError, match=rf"locomo.json:{line}: invalid UTF-8 at byte {bad}$"):
        locomo(path).load(tmp_path)


def test_longmemeval_accepts_a_bom_and_names_bad_bytes(tmp_path: Path) -> None:
    path = write_lme(tmp_path / "lme.json", [question("q1", [("s", DATE, [turn("user", "caf\u00e9", True)])], ["s"])])
    blob = path.read_bytes()
    path.write_bytes(BOM + blob)
    dataset = loader(path).load(tmp_path)
    assert [g.history_id for g in dataset.groups] == ["q1"]
    path.write_bytes(blob.replace(b"caf", b"caf\xff"))
    with pytest.raises(DataError, match=r"lme.json: after 0 questions: not valid JSON \(invalid UTF-8\)") as err:
        loader(path).load(tmp_path)
    assert "\n" not in str(err.value)


def test_corrections_read_strictly(tmp_path: Path) -> None:
    path = tmp_path / "fix.json"
    reason = f"the turn says so{SEPARATORS}really"
    path.write_bytes(BOM + json.dumps({"q1": {"answer": "x", "reason": reason}}, ensure_ascii=False).encode())
    assert load_corrections(path).by_id["q1"].reason == reason.strip()  # YAML would have folded U+0085
    path.write_bytes(b'{"q1": {"answer": "x\xff", "reason": "r"}}')
    with pytest.raises(DataError, match=r"fix.json:1: invalid UTF-8 at byte 20$"):  # 0-based, from the file's start
        load_corrections(path)
    yaml_path = tmp_path / "fix.yaml"
    yaml_path.write_bytes(b"q1:\n  answer: x\n  reason: bad \x01 byte\n")
    with pytest.raises(Exception) as err:
        load_corrections(yaml_path)
    assert "\n" not in str(err.value) and "not valid YAML" in str(err.value)
