"""arm=http when the server misbehaves: resets, refused tokens, asynchronous indexing, death
(against the loopback reference memory server, tests/servers/memory_server.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from arms.support import Blocking, compose_run
from memrun.arms import http_async
from memrun.cli import main
from memrun.config import ARM_RESERVED_KEYS
from memrun.core.http_policy import HttpPolicy
from memrun.core.plugins import build
from memrun.errors import ArmError
from memrun.io.reader import read_run
from memrun.records import Record
from servers import memory_server

RECORDS = [Record("D1:1", "Ann: I adopted a grey cat", "1 May 2023", "session_1"),
           Record("D1:2", "Ben: what is the cat called", "1 May 2023", "session_1"),
           Record("D2:1", "Ann: Pixel, and she loves tuna", "8 May 2023", "session_2")]
# A readiness check for the reference API: the namespace counts every memory as indexed.
READY = ["arm.ready.path='/v1/namespaces/{{ namespace }}'", "arm.ready.result=count", "arm.ready.equals='{{ n_records }}'",
         "arm.ready.interval_s=0.05", "arm.ready.timeout_s=30"]


def http_arm(url: str, ledger: Path, *overrides: str):
    cfg = compose_run(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={ledger}", *overrides])
    return Blocking(build(cfg.arm, ARM_RESERVED_KEYS, "arm"))


def cli(tmp_path: Path, url: str, *overrides: str) -> tuple[int, Path]:
    out = tmp_path / "run"
    rc = main(["benchmark=synthetic", "arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path / 'ledger'}",
               "progress=false", f"hydra.run.dir={out}", *overrides])
    return rc, out


def test_a_refused_token_stops_the_run_at_the_first_refusal(memory, tmp_path, capsys) -> None:
    state, url = memory
    state.fail["search"] = [401]  # the first search is refused, at once
    # The others take 1 s: none answers before memrun has read the 401, however loaded the
    # machine, so no answer can free a slot for a fifth search before the stop.
    state.search_delay_s = 1.0
    rc, out = cli(tmp_path, url, "arm.concurrency=4")
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1 and err[0].startswith("memrun: error: arm.search: "), err
    assert "HTTP 401" in err[0] and "arm.auth_token_env" in err[0]
    assert state.requests.count("search") <= 4  # those in flight, not one doomed request per item
    assert not out.exists() and state.namespaces == {}  # no item ran: no folder is left


def test_resets_are_retried_for_reads_and_for_writes_declared_idempotent(memory, tmp_path) -> None:
    state, url = memory
    arm = http_arm(url, tmp_path, "arm.attempts=3")
    state.fail["ingest"] = ["reset"]
    with pytest.raises(httpx.TransportError):
        arm.ingest("a", RECORDS)  # a write that may have arrived is not sent twice
    assert state.requests.count("ingest") == 1
    arm.close()

    arm = http_arm(url, tmp_path, "arm.attempts=3", "arm.ingest.idempotent=true")
    state.fail["ingest"] = ["reset"]
    arm.ingest("a", RECORDS)
    state.fail["search"] = ["reset", "reset"]
    assert [h.key for h in arm.search("tuna", 1)] == ["D2:1"]  # two resets, then the answer
    assert state.requests.count("search") == 3
    arm.close()


def test_a_write_on_a_kept_alive_connection_the_server_closed_while_idle_is_sent_once_on_a_fresh_one() -> None:
    state = memory_server.MemoryState()
    server = memory_server.serve(state, idle_close_s=0.2)  # keep-alive, closed after 0.2 s idle (as uvicorn after 5 s)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/namespaces"

    async def create_two() -> list[int]:
        session = http_async.open_session({}, 10.0)
        try:
            statuses = []
            for name in ("a", "b"):  # a POST: not idempotent, so never retried after it may have arrived
                reply = await http_async.send(session, "POST", url, policy=HttpPolicy(attempts=1), idempotent=False,
                                              auth_hint="", json={"namespace": name})
                statuses.append(reply.status_code)
                time.sleep(0.6)  # the server closes the pooled connection while the event loop is busy elsewhere
            return statuses
        finally:
            await session.close()

    try:
        assert asyncio.run(create_two()) == [201, 201]
        assert state.requests == ["create", "create"] and sorted(state.namespaces) == ["a", "b"]  # each sent once
    finally:
        server.shutdown()


def test_asynchronous_indexing_is_waited_for(memory, tmp_path) -> None:
    state, url = memory
    state.index_delay_s = 1.0  # the search right after the ingest arrives within it, even on a loaded machine
    arm = http_arm(url, tmp_path)
    arm.ingest("a", RECORDS)
    assert arm.search("tuna", 1) == []  # acknowledged, not yet searchable: measuring this measures nothing
    arm.close()
    for overrides in (READY, ["arm.settle_s=1.2"]):
        arm = http_arm(url, tmp_path, *overrides)
        arm.ingest("a", RECORDS)
        assert [h.key for h in arm.search("tuna", 1)] == ["D2:1"]
        arm.close()
    assert state.requests.count("stats") >= 2  # the ready check polled


def test_a_ready_check_that_never_holds_is_reported(memory, tmp_path) -> None:
    state, url = memory
    never = [*READY[:2], "arm.ready.equals='{{ n_records + 1 }}'", "arm.ready.timeout_s=0.3"]
    arm = http_arm(url, tmp_path, *never)
    with pytest.raises(ArmError, match=r"arm.ready: namespace .* not ready after 0.3 s: 'count' gave 3, "
                                       r"waiting for 4; no history has been ready"):
        arm.ingest("a", RECORDS)
    arm.close()


@pytest.mark.parametrize(("overrides", "message"), [
    (["arm.ready.intervl_s=1"], "intervl_s"),
    (["arm.ready.path=/x"], "arm.ready.result is not set"),
    (["arm.ready.result=count"], "arm.ready.path is not set"),
    (["arm.ready.path=/x", "arm.ready.result=count", "arm.ready.timeout_s=0"], "timeout_s and interval_s must be"),
    (["arm.settle_s=-1"], "arm.settle_s=-1.0: must be a number of seconds >= 0"),
    (["arm.ready.path=/x", "arm.ready.result=count", "arm.ready.equals='{{ nrecords }}'"], "nrecords"),
])
def test_ready_and_settle_are_validated(memory, tmp_path, overrides, message) -> None:
    state, url = memory
    with pytest.raises(Exception, match=message):
        http_arm(url, tmp_path, *overrides)
    assert "ingest" not in state.requests


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_health_check_that_fails_is_one_line_naming_the_server(memory, tmp_path) -> None:
    # Set-up sends through aiohttp, as the run's requests do; its errors read as before.
    state, url = memory
    state.fail["health"] = [500]
    with pytest.raises(ArmError, match=rf"^arm.health: memory server at {url}/ refused the health check: HTTP 500 "
                                       r"from GET .*/v1/health: .*check arm.base_url"):
        http_arm(url, tmp_path, "arm.attempts=1")
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    with pytest.raises(ArmError, match=rf"^arm.health: memory server at {dead}/ did not answer: cannot connect to "
                                       rf"{dead}/v1/health") as refused:
        http_arm(dead, tmp_path, "arm.attempts=1")
    assert "\n" not in str(refused.value)


def test_a_server_that_dies_mid_run(tmp_path, capsys) -> None:
    state = memory_server.MemoryState()
    server = memory_server.serve(state)
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}"
    arm = http_arm(url, tmp_path, "arm.attempts=1", "arm.timeout_s=2")
    arm.ingest("a", RECORDS)
    arm.ingest("b", RECORDS)
    server.shutdown()
    server.server_close()  # the server is gone: connections are refused
    with pytest.raises(httpx.ConnectError):
        arm.ingest("c", RECORDS)
    arm.close()
    out, err = capsys.readouterr()
    assert out == ""  # warnings never go to stdout, where the results are
    lines = err.strip().splitlines()
    assert lines[0].startswith("warning: could not erase namespace memrun-")
    assert lines[-1].startswith("warning: could not erase 2 of the 3 namespaces this run created on") and \
        "the next arm=http run against this server" in lines[-1]
    (ledger,) = tmp_path.glob("*.json")
    data = json.loads(ledger.read_text())
    assert len(data["namespaces"]) == 2 and "ConnectError" in data["unerased"]

    # The next run against the restarted server erases them, and says what happened.
    data["pid"] = dead_pid()
    ledger.write_text(json.dumps(data))
    state2 = memory_server.MemoryState(namespaces={n: [] for n in data["namespaces"]})
    server = memory_server.serve(state2, port)
    try:
        http_arm(url, tmp_path).close()
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert "that an earlier run could not erase before it ended" in err and "killed" not in err
    assert state2.namespaces == {} and not ledger.exists()


def test_a_reply_that_is_not_json_is_an_error_of_its_item_and_the_run_goes_on(memory, tmp_path, capsys) -> None:
    """One search in twenty answers 200 with a body cut short: without a retry those items
    are errored (counted against max_error_share) and every other item completes; with
    one retry (a search is idempotent) each is sent again and answered."""
    state, url = memory
    state.fail["search"] = ([0] * 19 + ["badjson"]) * 2  # the 20th search of the run's 30
    rc, out = cli(tmp_path / "once", url, "arm.attempts=1", "arm.concurrency=4")
    err = capsys.readouterr().err
    rows = read_run(out).table.to_pylist()
    errored = [r for r in rows if r["error"]]
    assert rc == 0 and len(rows) == 30 and len(errored) == 1, err
    assert "did not answer with JSON" in errored[0]["error"] and errored[0]["error"].startswith("search: MalformedReply")
    assert "1 of 30 rows failed" in err and "Traceback" not in err

    state.fail["search"] = [0] * 4 + ["badjson"] * 1 + [0] * 14 + ["badjson"]
    state.requests.clear()
    rc, out = cli(tmp_path / "retried", url, "arm.attempts=2", "arm.concurrency=4")
    rows = read_run(out).table.to_pylist()
    assert rc == 0 and not [r for r in rows if r["error"]] and state.requests.count("search") == 32

    state.fail["search"] = ["badjson"] * 5  # 5 of 30 is more than max_error_share=0.1: degraded, rows kept
    rc, out = cli(tmp_path / "many", url, "arm.attempts=1", "arm.concurrency=1")
    err = capsys.readouterr().err
    assert rc == 2 and "5 of 30 rows failed" in err and len(read_run(out).table.to_pylist()) == 30, err


def test_a_base_url_with_a_fragment_is_refused_before_any_request(memory, tmp_path, capsys) -> None:
    state, url = memory
    rc, out = cli(tmp_path, f"'{url}/#access_token=tok-Frag-1'")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("memrun: error: arm.base_url: "), err
    assert "fragment" in err[0] and "tok-Frag-1" not in err[0]
    assert state.requests == [] and not out.exists()
