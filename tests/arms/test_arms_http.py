"""arm=http against the loopback reference memory server (tests/servers/memory_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arms.support import REPO, Blocking, compose_run, run_in_process
from memrun.config import ARM_RESERVED_KEYS
from memrun.core.plugins import build
from memrun.errors import ArmError
from memrun.io.reader import read_run
from memrun.records import Record

RECORDS = [Record("D1:1", "Ann: I adopted a grey cat", "1 May 2023", "session_1"),
           Record("D1:2", "Ben: what is the cat called", "1 May 2023", "session_1"),
           Record("D2:1", "Ann: Pixel, and she loves tuna", "8 May 2023", "session_2")]


def http_arm(url: str, ledger: Path, *overrides: str) -> Blocking:
    """The arm as conf/arm/http.yaml (the worked example) builds it, plus overrides."""
    cfg = compose_run(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={ledger}", *overrides])
    return Blocking(build(cfg.arm, ARM_RESERVED_KEYS, "arm"))  # as the run builds it, errors included


def ledger_files(ledger: Path) -> list[str]:
    return sorted(p.name for p in ledger.glob("*.json")) if ledger.is_dir() else []


def test_namespace_lifecycle_flags_and_health(memory, tmp_path) -> None:
    state, url = memory
    arm = http_arm(url, tmp_path)
    assert arm.describe() == {"search_mode": "server", "server_build": "refmem 1.0.0", "server_model": "none",
                              "embedder": "bag-of-words", "embedder_dim": 0, "fake_providers": False,
                              "crediting": False, "isolation": "per_history"}
    arm.ingest("conv-1", RECORDS)
    (first,) = state.namespaces
    assert first.startswith("memrun-") and first.endswith("-conv-1")
    assert state.namespaces[first][2] == {"id": "D2:1", "content": "Ann: Pixel, and she loves tuna",
                                          "metadata": {"session": "session_2", "timestamp": "8 May 2023"}}
    assert json.loads((tmp_path / ledger_files(tmp_path)[0]).read_text())["namespaces"] == [first]
    hits = arm.search("what is the cat called", 2)
    assert [h.key for h in hits] == ["D1:2", "D1:1"] and hits[0].score > hits[1].score
    assert state.searches[-1]["options"] == {"reinforce": False, "scope": "pinned"}
    assert state.searches[-1]["limit"] == 2
    arm.ingest("conv/2 b", RECORDS[:1])  # the next history: the first namespace is erased
    (second,) = state.namespaces
    assert second == arm.namespace_for("conv/2 b") and "-conv-2-b-" in second and second != first
    assert arm.namespace_for("conv-2-b") != second  # ids that differ only in unsafe characters stay apart
    arm.close()
    assert state.namespaces == {} and ledger_files(tmp_path) == []
    arm.close()  # idempotent


def test_set_up_and_close_reach_the_server_from_inside_a_running_event_loop(memory, tmp_path) -> None:
    # Set-up (health) and close send from plain code, each request on a loop of its own: from
    # a thread that runs a loop already (a notebook, an async caller) they go through a worker.
    state, url = memory

    async def inside() -> tuple[dict, str]:
        cfg = compose_run(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}"])
        arm = build(cfg.arm, ARM_RESERVED_KEYS, "arm")
        await arm.ingest("conv-1", RECORDS)
        (name,) = state.namespaces
        arm.close()  # the history was never released: close erases it, blocking, mid-loop
        await arm.disconnect()
        return arm.describe(), name

    described, name = asyncio.run(inside())
    assert described["server_build"] == "refmem 1.0.0" and name.endswith("-conv-1")
    assert state.namespaces == {} and ledger_files(tmp_path) == []
    assert state.requests.count("health") == 1 and state.requests.count("erase") == 1


def test_crediting_sends_crediting_flags(memory, tmp_path) -> None:
    state, url = memory
    out = tmp_path / "run"
    run_in_process(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}", "arm.crediting=true"], out)
    assert {json.dumps(s["options"]) for s in state.searches} == {json.dumps({"reinforce": True})}
    instrument = read_run(out).instrument
    assert instrument.crediting is True and instrument.server_build == "refmem 1.0.0"
    assert state.namespaces == {} and len(state.searches) == 30


def test_auth_token_comes_from_the_environment(memory, tmp_path, monkeypatch) -> None:
    state, url = memory
    state.token = "s3cret"
    monkeypatch.delenv("MEMSRV_TOKEN", raising=False)
    with pytest.raises(ArmError, match="arm.auth_token_env: environment variable MEMSRV_TOKEN is not set"):
        http_arm(url, tmp_path, "arm.auth_token_env=MEMSRV_TOKEN")
    monkeypatch.setenv("MEMSRV_TOKEN", "wrong")
    with pytest.raises(ArmError, match=r"arm.health: .*HTTP 401 .*refused the token in \$MEMSRV_TOKEN"):
        http_arm(url, tmp_path, "arm.auth_token_env=MEMSRV_TOKEN")
    monkeypatch.setenv("MEMSRV_TOKEN", "s3cret")
    arm = http_arm(url, tmp_path, "arm.auth_token_env=MEMSRV_TOKEN")
    arm.ingest("h", RECORDS)
    assert arm.search("tuna", 1)[0].key == "D2:1"
    arm.close()


def test_fake_providers_are_flagged_or_refused(memory, tmp_path) -> None:
    state, url = memory
    state.providers = {"embedder": "StubEmbedder", "llm": "gpt-4o-mini"}
    with pytest.raises(ArmError, match=r"fake or stub providers \(StubEmbedder\)"):
        http_arm(url, tmp_path, "arm.require_real_providers=true")
    arm = http_arm(url, tmp_path)
    assert arm.describe()["fake_providers"] is True
    arm.close()


@pytest.mark.parametrize("override, message", [
    ("arm.search.result='results[?'", r"arm.search.result: 'results\[\?' is not a JMESPath expression"),
    ("arm.search.body.query='{{ qery }}'", r"arm.search.body.query: 'qery' is undefined"),
    ("arm.ingest.record.id='{{ record.kee }}'", r"arm.ingest.record.id: 'dict object' has no attribute 'kee'"),
    ("arm.erase=null", "arm.erase is not configured"),
    ("arm.search.result=null", "arm.search.result is not set"),
    ("arm.timeout_s=-1", r"arm.timeout_s=-1.0: must be a positive number of seconds"),
    ("arm.attempts=0", r"arm.attempts=0: must be at least 1"),
])
def test_misconfiguration_fails_before_any_request(memory, tmp_path, override, message) -> None:
    state, url = memory
    with pytest.raises(ArmError, match=message):
        http_arm(url, tmp_path, override)
    assert "search" not in state.requests and "ingest" not in state.requests


def test_bad_response_path_stops_the_run_and_cleans_up(memory, tmp_path) -> None:
    state, url = memory
    overrides = ["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}", "arm.search.result='hits[].{key: id}'",
                 "arm.concurrency=4"]
    with pytest.raises(ArmError, match=r"found nothing in the response .* an object with keys results, took_ms"):
        run_in_process(overrides, tmp_path / "run")
    assert state.requests.count("search") <= 4 and state.namespaces == {}  # those in flight when the first failed
    assert read_run(tmp_path / "run").instrument.status == "failed"


def test_server_errors_are_retried_then_recorded_on_the_item(memory, tmp_path) -> None:
    state, url = memory
    state.fail["search"] = [503, 500, 500]  # 503 retried; then 500, 500 exhaust attempts=2
    state.fail["ingest"] = [400]  # the first history cannot be ingested
    out = tmp_path / "run"
    # 7 of 30 rows fail, over the default max_error_share (a degraded run, tests/pipeline/test_run_degraded.py):
    # this test is about how each failure is recorded, so the threshold is lifted; one call at a
    # time, so that the failures fall on one search (concurrent faults: test_arms_http_concurrency.py)
    summary = run_in_process(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}", "arm.attempts=2",
                              "max_error_share=1", "arm.concurrency=1"], out)
    rows = read_run(out).table.to_pylist()
    errors = [r["error"] for r in rows if r["error"]]
    assert sum(e.startswith("ingest: HTTPStatusError: HTTP 400") for e in errors) == 6  # conversation 1's items
    assert sum(e.startswith("search: HTTPStatusError: HTTP 500") for e in errors) == 1
    assert summary["n_errors"] == 7 and summary["overall_all"]["n_scored"] == 30 - 7  # errors are not misses
    assert state.namespaces == {}


def test_keep_namespaces_keeps_and_lists_them(memory, tmp_path, capsys) -> None:
    state, url = memory
    arm = http_arm(url, tmp_path, "arm.keep_namespaces=true")
    arm.ingest("a", RECORDS)
    arm.ingest("b", RECORDS)
    arm.close()
    printed = capsys.readouterr().err
    assert len(state.namespaces) == 2
    (kept,) = ledger_files(tmp_path)
    assert kept.startswith("kept-")
    assert sorted(json.loads((tmp_path / kept).read_text())["namespaces"]) == sorted(state.namespaces)
    assert all(name in printed for name in state.namespaces)
    http_arm(url, tmp_path).close()  # a later run leaves kept namespaces alone
    assert len(state.namespaces) == 2


def start_memrun(url: str, ledger: Path, out: Path, *overrides: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "memrun", "benchmark=synthetic", "arm=http", f"arm.base_url={url}",
         f"arm.ledger_dir={ledger}", "progress=false", f"hydra.run.dir={out}", *overrides],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for_searches(state, proc: subprocess.Popen, n: int, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while len(state.searches) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "memrun did not start searching"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_terminated_run_leaves_no_namespace(memory, tmp_path, sig) -> None:
    state, url = memory
    state.search_delay_s = 1.0  # 4 calls at a time: 5 s or more of the run are left below
    proc = start_memrun(url, tmp_path / "ledger", tmp_path / "run", "arm.concurrency=4")
    # mid-run: 4 conversations open at once, the first one searched (its rows written), others not
    deadline = time.monotonic() + 180  # only against a hang: memrun starts slowly on a loaded machine
    while sum(s["namespace"].endswith("-01-billing") for s in state.searches) < 6 or len(state.searches) < 8:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(1.0)  # for its rows to reach the writer (on a loaded machine too)
    assert state.namespaces and state.requests.count("create") > 1
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert state.namespaces == {} and ledger_files(tmp_path / "ledger") == []
    assert read_run(tmp_path / "run").instrument.status == "interrupted"


def test_a_killed_run_is_cleaned_by_the_next_one(memory, tmp_path) -> None:
    state, url = memory
    # 1 s searches, 16 at a time: once the first have answered, the other 14 keep every history
    # open for another second (with 0.1 s the run could end before a loaded machine's kill)
    state.search_delay_s = 1.0
    ledger = tmp_path / "ledger"
    proc = start_memrun(url, ledger, tmp_path / "run")
    wait_for_searches(state, proc, 3)
    proc.kill()  # SIGKILL: nothing in the process can clean up
    proc.communicate(timeout=120)
    left = set(state.namespaces)
    (entry,) = ledger_files(ledger)
    assert left and set(json.loads((ledger / entry).read_text())["namespaces"]) >= left
    # A ledger of a live process (this one) is not touched.
    live = ledger / f"{socket.gethostname()}-{os.getpid()}-live.json"
    live.write_text(json.dumps({"base_url": f"{url}/", "host": socket.gethostname(), "pid": os.getpid(),
                                "namespaces": ["memrun-live-1"]}))
    state.namespaces["memrun-live-1"] = []
    arm = http_arm(url, ledger)
    assert arm.erased_leftovers >= len(left) and set(state.namespaces) == {"memrun-live-1"}
    assert ledger_files(ledger) == [live.name]
    arm.close()
