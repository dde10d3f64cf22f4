"""arm=mcp with many histories and calls in flight (arm.concurrency) against the tests' own
MCP server: the rows of a one-at-a-time run, calls overlapping over one session, and in
the fresh-process mode one server per open history."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from arms.support import TESTS, run_in_process
from memrun.io.reader import read_run

SEARCHPATH = f"hydra.searchpath=[file://{TESTS / 'servers' / 'conf'}]"
LATENCY = ("search_latency_ms", "search_queue_ms", "run_id")


@pytest.fixture(autouse=True)
def _tests_dir(monkeypatch) -> None:
    monkeypatch.setenv("MEMRUN_TESTS_DIR", str(TESTS))


def run(tmp_path: Path, name: str, *overrides: str, slow_s: float = 0.1) -> list[dict[str, Any]]:
    """The rows of one run; ``slow_s``: the seconds each of the server's tool calls sleeps."""
    out = tmp_path / name
    run_in_process(["benchmark=synthetic", "arm=mcp_testmem", SEARCHPATH, f"arm.command={sys.executable}",
                    f"arm.ledger_dir={tmp_path / 'ledger'}", f"+arm.env.MCP_TEST_SLOW_S={slow_s}", *overrides], out)
    return [{k: v for k, v in r.items() if k not in LATENCY} for r in read_run(out).table.to_pylist()]


def test_calls_in_flight_over_one_session_give_the_rows_of_a_one_at_a_time_run(tmp_path, monkeypatch) -> None:
    state = tmp_path / "state.json"
    monkeypatch.setenv("MCP_TEST_STATE", str(state))
    one = run(tmp_path, "one", "arm.concurrency=1")
    assert json.loads(state.read_text())["peak_in_flight"] == 1
    many = run(tmp_path, "many", "arm.concurrency=16", slow_s=0.5)
    saved = json.loads(state.read_text())
    assert many == one and len(one) == 30 and any(r["retrieved_keys"] for r in one)
    # 30 searches of 0.5 s over the run's one session: at least 8 were in the server at once
    # (one history's six searches and more; a loaded machine starts the histories apart, but
    # not 0.5 s apart)
    assert saved["peak_in_flight"] >= 8 and saved["namespaces"] == {}
    assert not list((tmp_path / "ledger").glob("*.json"))


def test_fresh_process_mode_and_several_sessions_give_the_same_rows(tmp_path) -> None:
    """One server per open history ({{ namespace_dir }}), and arm.sessions=3 servers each
    holding the histories it was given (the test server keeps its store in memory, so a
    history's calls must all go to one session)."""
    one = run(tmp_path, "one", "arm.concurrency=1")
    many = run(tmp_path, "many", "arm.concurrency=16", "arm.erase=null",
               "arm.env.MCP_TEST_STATE='{{ namespace_dir }}/state.json'")
    pooled = run(tmp_path, "pooled", "arm.concurrency=16", "arm.sessions=3")
    assert many == one and pooled == one
    assert not list((tmp_path / "ledger").glob("*.json")) and not list(tmp_path.glob("memrun-mcp-*"))
