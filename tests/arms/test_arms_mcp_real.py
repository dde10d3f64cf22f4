"""arm=mcp against two real third-party MCP memory servers, and runs that are terminated.

The servers are installed by tests/servers/install_mcp_servers.sh (.ci/run runs it) into
``.memrun-cache/mcp-servers`` (or ``$MEMRUN_MCP_SERVERS``): the reference knowledge-graph
server ``@modelcontextprotocol/server-memory`` (npm) and ``agent-logbook`` (PyPI). Missing:
skipped, but a failure under CI (MEMRUN_REQUIRE_DATA=1), as real data is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arms.support import REPO, TESTS, run_in_process
from memrun.io.reader import read_run

SERVERS = Path(os.environ.get("MEMRUN_MCP_SERVERS") or REPO / ".memrun-cache" / "mcp-servers")
COMMANDS = {"mcp_server_memory": SERVERS / "node_modules" / ".bin" / "mcp-server-memory",
            "mcp_logbook": SERVERS / "logbook" / "bin" / "agent-logbook",
            "mcp_local_memory": SERVERS / "local-memory" / "bin" / "local-memory"}
SEARCHPATH = f"hydra.searchpath=[file://{TESTS / 'servers' / 'conf'}]"


def server_command(arm: str) -> Path:
    path = COMMANDS[arm]
    if not path.exists():
        message = f"{path} is not installed: run tests/servers/install_mcp_servers.sh"
        if os.environ.get("MEMRUN_REQUIRE_DATA"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.mark.realdata
@pytest.mark.parametrize("arm", ["mcp_server_memory", "mcp_logbook"])
def test_a_locomo_slice_through_a_real_server(arm, data_dir, tmp_path) -> None:
    """Two LoCoMo conversations (two server processes, one per history) through the real
    server; every history's folder is gone after the run; the instrument names the server."""
    summary = run_in_process(["benchmark=locomo", "benchmark.limit=40", f"arm={arm}",
                              f"arm.command={server_command(arm)}", f"arm.ledger_dir={tmp_path / 'ledger'}"],
                             tmp_path / "run")
    instrument = read_run(tmp_path / "run").instrument
    checks = summary["arm_checks"]
    assert checks["n_searches"] == 40
    if arm == "mcp_logbook":  # FTS5 over the turns: it finds things
        assert instrument.server_build.startswith("logbook ") and checks["n_hits"] > 40
        assert checks["unknown_keys"] == 0
    else:  # the whole question as one substring: nothing, said plainly
        assert instrument.server_build.startswith("memory-server ") and checks["empty_searches"] >= 35
    assert not list((tmp_path / "ledger").glob("*.json"))  # every history's folder removed


def start_memrun(ledger: Path, out: Path, *more: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMRUN_TESTS_DIR": str(TESTS)}
    return subprocess.Popen(
        [sys.executable, "-m", "memrun", "benchmark=synthetic", "arm=mcp_testmem", SEARCHPATH,
         f"arm.command={sys.executable}", "arm.erase=null", "+arm.env.MCP_TEST_SLOW_S=0.5",
         "arm.env.MCP_TEST_STATE='{{ namespace_dir }}/state.json'", f"arm.ledger_dir={ledger}",
         "progress=false", f"hydra.run.dir={out}", *more],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for_folder(ledger: Path, proc: subprocess.Popen, timeout: float = 120.0) -> Path:
    """The history folder the running memrun lists in its ledger, once its server has state."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "memrun did not start a history"
        for entry in ledger.glob("*.json"):
            names = json.loads(entry.read_text()).get("namespaces", [])
            if names and (Path(names[0]) / "state.json").exists():
                return Path(names[0])
        time.sleep(0.1)


@pytest.mark.slow
def test_sigterm_and_sigkill_leave_no_history_folder(tmp_path) -> None:
    ledger = tmp_path / "ledger"
    proc = start_memrun(ledger, tmp_path / "run")  # arm.concurrency 16: every history open at once
    folder = wait_for_folder(ledger, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert not folder.exists() and not list(ledger.glob("*.json"))
    assert not [p for p in Path(tempfile.gettempdir()).glob("memrun-mcp-memrun-*") if str(folder).startswith(str(p))]
    proc = start_memrun(ledger, tmp_path / "run2", "arm.concurrency=1")  # one history open: one folder left
    folder = wait_for_folder(ledger, proc)
    proc.kill()  # SIGKILL: the ledger is the remedy
    proc.communicate(timeout=60)
    assert folder.exists() and list(ledger.glob("*.json"))
    proc = start_memrun(ledger, tmp_path / "run3", "benchmark.limit=1")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "erased 1 namespaces left" in err and not folder.exists() and not list(ledger.glob("*.json"))
