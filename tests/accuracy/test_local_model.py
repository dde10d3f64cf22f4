"""A model on your own machine (docs/accuracy.md): the documented reader=local / judge=local
command against the keyless loopback OpenAI-compatible server, as a local Ollama/vLLM/llama.cpp
server answers: no key in the environment, none sent, the model the server reports recorded."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from accuracy.helpers import execute_run, field, gold_judge, is_judge, rows
from memrun.benchmarks.synthetic import Synthetic
from memrun.errors import ConfigError
from memrun.io.reader import read_run
from servers.openai_server import prompt_text

DOCS = Path(__file__).resolve().parents[2] / "docs" / "accuracy.md"
GOLD = {item.question: item.answer for item in Synthetic().load(Path(".")).items()}


def documented_overrides() -> list[str]:
    """The overrides of the command under docs/accuracy.md's ``<!-- local-model -->`` marker."""
    text = DOCS.read_text()
    block = text[text.index("<!-- local-model -->"):].split("```")[1]
    command = next(line for line in block.splitlines() if line.startswith("memrun "))
    return [a for a in shlex.split(command)[1:] if not a.startswith("benchmark=")]


@pytest.fixture
def keyless(openai_server, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the presets must not read it
    openai_server.served_model = "llama-3.1-8b-instruct-q4_k_m.gguf"  # what a llama.cpp server reports
    openai_server.responder = lambda body: (gold_judge(prompt_text(body)) if is_judge(prompt_text(body))
                                            else str(GOLD.get(field(prompt_text(body), "Question") or "", "?")))
    return openai_server


def test_the_documented_local_command_runs_keyless_and_records_the_served_model(keyless, tmp_path) -> None:
    overrides = documented_overrides()
    assert "reader=local" in overrides and "judge=local" in overrides
    at = [f"reader.base_url={keyless.base_url}", f"judge.base_url={keyless.base_url}"]  # the test's port
    out, _ = execute_run(tmp_path, *overrides, *at)
    table = rows(out)
    assert len(table) == len(GOLD) and all(r["label"] == "correct" for r in table)
    assert keyless.log and all("authorization" not in entry.headers for entry in keyless.log)  # no key sent
    asked = {entry.body["model"] for entry in keyless.log if entry.path.endswith("/chat/completions")}
    assert asked == {"llama3.1:8b"}
    inst = read_run(out).instrument
    assert inst.reader_model == "llama3.1:8b" and inst.judge_model == "llama3.1:8b"
    assert inst.served_models == {"reader": "llama-3.1-8b-instruct-q4_k_m.gguf",
                                  "judge": "llama-3.1-8b-instruct-q4_k_m.gguf"}
    assert inst.llm_endpoints == {"reader": keyless.base_url, "judge": keyless.base_url}
    # a re-run answered wholly from the cache still knows what the server ran
    again, _ = execute_run(tmp_path, *overrides, *at, name="again")
    assert len(keyless.log) == 2 * len(GOLD)
    assert read_run(again).instrument.served_models == inst.served_models


@pytest.mark.parametrize("overrides,needle", [
    (["reader=local", "judge=local", "judge.model=x"], "reader.model: a keyless server"),
    (["reader=local", "reader.model=x", "judge=local"], "judge.model has no value: set judge.model="),
    (["reader.api_key_env=null", "reader.model=x", "judge=exact"], "OpenAI's API needs a key"),
])
def test_keyless_mistakes_are_one_line_before_any_call(keyless, monkeypatch, tmp_path, overrides, needle) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")  # the last case: keyless to OpenAI's own API is refused, nothing sent
    with pytest.raises(ConfigError, match=re.escape(needle)):
        execute_run(tmp_path, *overrides)
    assert keyless.log == []


def test_a_cache_written_before_served_models_gains_the_column(tmp_path) -> None:
    """calls.sqlite of the previous layout (no model column) is opened, read and written."""
    import sqlite3

    from memrun.llm.cache import CallCache
    from memrun.llm.client import ChatResult

    db = sqlite3.connect(tmp_path / "calls.sqlite")
    db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER,"
               " completion_tokens INTEGER, latency_ms REAL NOT NULL, finish_reason TEXT, created REAL NOT NULL)"
               " WITHOUT ROWID")
    db.execute("INSERT INTO replies VALUES ('old', 'an answer', 1, 2, 3.0, 'stop', 0)")
    db.commit()
    db.close()
    with CallCache(tmp_path) as cache:
        assert cache.get("old") == ChatResult("an answer", 1, 2, 3.0, "stop", None)
        cache.put("new", ChatResult("b", None, None, 1.0, None, "qwen2.5:7b"))
        assert cache.get("new").model == "qwen2.5:7b"
