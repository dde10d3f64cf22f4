"""JSON Lines files are streamed: one over-long line is an error naming the file, the line
and the limit (it used to be a MemoryError: the file was read whole), and memory stays
bounded by one line however large the file."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest

from conftest import run_memrun
from memrun.arms.answers_file import load_jsonl
from memrun.benchmarks.jsonl import parse_file
from memrun.benchmarks.text import MAX_LINE_ENV, jsonl_lines
from memrun.errors import ConfigError, DataError

LIMIT = 1000


def item(item_id: str, content: str = "a") -> str:
    return json.dumps({"item_id": item_id, "history": [{"role": "user", "content": content}], "question": "q"})


@pytest.fixture
def long_line_file(tmp_path: Path) -> Path:
    """Line 2 is 5,000 bytes, over a 1,000-byte limit; lines 1 and 3 are fine, line 4 is not JSON."""
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join([item("a"), item("b", "x" * 5000), item("c"), "{bad"]) + "\n")
    return path


def test_an_over_long_line_is_one_error_naming_file_line_and_limit(long_line_file, monkeypatch) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, str(LIMIT))
    parsed = parse_file(long_line_file)
    assert parsed.errors == [
        f"{long_line_file}:2: line is longer than 1,000 bytes, the limit (set {MAX_LINE_ENV} to raise it)",
        f"{long_line_file}:4: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
    ]
    assert [g.history_id for g in parsed.groups] == ["a", "c"]  # the lines after it are read
    assert parsed.sha256 == hashlib.sha256(long_line_file.read_bytes()).hexdigest()  # every byte hashed
    monkeypatch.setenv(MAX_LINE_ENV, "10000")
    assert [g.history_id for g in parse_file(long_line_file).groups] == ["a", "b", "c"]


def test_the_limit_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"x" * 10 + b"\n" + b"y" * 11 + b"\n" + b"z" * 11)
    lines = list(jsonl_lines(path, limit=10))
    assert [(line.number, line.text) for line in lines] == [(1, "x" * 10), (2, None), (3, None)]


def test_a_run_and_validate_stop_with_one_line(long_line_file, tmp_path) -> None:
    env = {MAX_LINE_ENV: str(LIMIT)}
    run = run_memrun(["benchmark=jsonl", f"benchmark.path={long_line_file}", "progress=false"], tmp_path, env)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"memrun: error: {long_line_file}:2: line is longer than 1,000 bytes, the limit (set {MAX_LINE_ENV} to "
        f"raise it) (and 1 more; memrun validate {long_line_file} lists them)"]
    bad_env = run_memrun(["validate", str(long_line_file)], tmp_path, {MAX_LINE_ENV: "lots"})
    assert bad_env.returncode == 2 and bad_env.stderr.startswith(f"memrun: error: {MAX_LINE_ENV}=lots: give a positive")


def test_an_answers_file_line_over_the_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"question_id": "q1", "hypothesis": "y" * 5000}) + "\n")
    monkeypatch.setenv(MAX_LINE_ENV, str(LIMIT))
    with pytest.raises(DataError, match=r"answers.jsonl:1: line is longer than 1,000 bytes, the limit"):
        load_jsonl(path)
    monkeypatch.setenv(MAX_LINE_ENV, "0")
    with pytest.raises(ConfigError, match=f"{MAX_LINE_ENV}=0: give a positive number of bytes"):
        load_jsonl(path)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_bounded_by_one_line_not_the_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "big.jsonl"
    comment = b"// " + b"c" * 2000 + b"\n"  # skipped lines: nothing they hold is kept
    with path.open("wb") as f:
        f.write(item("a").encode() + b"\n")
        for _ in range((16 << 20) // len(comment)):  # 16 MiB of them
            f.write(comment)
        f.write(item("b", "z" * (8 << 20)).encode() + b"\n")  # one 8 MiB line over the limit below
        f.write(item("c").encode() + b"\n")
    monkeypatch.setenv(MAX_LINE_ENV, str(1 << 20))
    parsed: list = []
    peak = _peak_bytes(lambda: parsed.append(parse_file(path)))
    assert [g.history_id for g in parsed[0].groups] == ["a", "c"] and parsed[0].n_errors == 1
    # a few times the 1 MiB line limit; less than the 8 MiB line alone, a quarter of the file
    assert path.stat().st_size > 24_000_000 and peak < 6 << 20
