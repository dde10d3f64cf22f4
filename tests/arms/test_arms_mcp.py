"""arm=mcp against the tests' own MCP server (tests/servers/mcp_server.py, a real stdio subprocess).

Each arm start launches a Python MCP server (a few seconds on a loaded machine), so the
fault cases that concern one call share a session (``tools``) where the check is the arm's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from arms.support import TESTS, compose_run, run_in_process
from memrun.arms.mcp_client import McpSession, ServerSpec
from memrun.arms.mcp_ops import ArgumentChecker, ToolOperation, check_tools, map_result
from memrun.commands.compare import main as compare_main
from memrun.config import ARM_RESERVED_KEYS
from memrun.core.plugins import build
from memrun.errors import ArmError
from memrun.io.reader import read_run
from memrun.records import Record

SERVER = str(TESTS / "servers" / "mcp_server.py")
SEARCHPATH = f"hydra.searchpath=[file://{TESTS / 'servers' / 'conf'}]"
RECORDS = [Record("D1:1", "Ann: I adopted a grey cat", "1 May 2023", "session_1"),
           Record("D1:2", "Ben: what is the cat called", "1 May 2023", "session_1"),
           Record("D2:1", "Ann: Pixel, and she loves tuna", "8 May 2023", "session_2")]


@pytest.fixture(autouse=True)
def _tests_dir(monkeypatch) -> None:
    monkeypatch.setenv("MEMRUN_TESTS_DIR", str(TESTS))


def overrides(ledger: Path, *more: str) -> list[str]:
    return ["arm=mcp_testmem", SEARCHPATH, f"arm.command={sys.executable}", f"arm.ledger_dir={ledger}", *more]


def mcp_arm(ledger: Path, *more: str):
    """The arm as tests/servers/conf/arm/mcp_testmem.yaml builds it, plus overrides (as the run builds it)."""
    return build(compose_run(overrides(ledger, *more)).arm, ARM_RESERVED_KEYS, "arm")


def on_loop(arm, body) -> None:
    """Await ``body()`` on one event loop, as a run awaits the arm's calls, then disconnect."""
    async def main() -> None:
        try:
            await body()
        finally:
            await arm.disconnect()

    asyncio.run(main())


def state(path: Path) -> dict:
    return json.loads(path.read_text())["namespaces"]


def test_lifecycle_namespaces_and_instrument(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MCP_TEST_STATE", str(tmp_path / "state.json"))
    arm = mcp_arm(tmp_path / "ledger")
    fields = arm.describe()
    assert fields["server_build"].startswith("testmem 0.3.1; tools sha256:") and fields["search_mode"] == "lexical"
    assert fields["mcp_server"] == "memrun-test-memory 0.3.1" and "store" in fields["mcp_tools"]

    async def body() -> None:
        await arm.ingest("conv-1", RECORDS)
        (first,) = state(tmp_path / "state.json")
        assert first.startswith("memrun-") and first.endswith("-conv-1")
        assert [f.name for f in (tmp_path / "ledger").glob("*.json")]
        hits = await arm.search("what is the cat called", 2, history_id="conv-1")
        assert [h.key for h in hits] == ["D1:2", "D1:1"] and hits[0].score > hits[1].score
        await arm.release("conv-1")  # its searches are done: its namespace is erased
        await arm.ingest("conv 2", RECORDS[:1])
        (second,) = state(tmp_path / "state.json")
        assert second != first and "conv-2" in second

    on_loop(arm, body)
    arm.close()
    assert state(tmp_path / "state.json") == {} and not list((tmp_path / "ledger").glob("*.json"))
    arm.close()  # idempotent


def test_a_run_through_the_arm_and_a_refusal_when_tool_schemas_change(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MCP_TEST_STATE", str(tmp_path / "state.json"))
    run_in_process(overrides(tmp_path / "ledger"), tmp_path / "a")
    instrument = read_run(tmp_path / "a").instrument
    assert instrument.server_build.startswith("testmem 0.3.1; tools sha256:")
    assert state(tmp_path / "state.json") == {}  # every history's namespace erased
    run_in_process(overrides(tmp_path / "ledger", "+arm.env.MCP_TEST_SCHEMA=v2"), tmp_path / "b")
    assert read_run(tmp_path / "b").instrument.server_build != instrument.server_build
    capsys.readouterr()
    code = compare_main([str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr()
    assert code != 0 and "server_build" in out.out + out.err


def test_a_fresh_server_per_history_on_its_own_folder(tmp_path) -> None:
    """{{ namespace_dir }} in env: each history starts its own server; its folder goes with it."""
    arm = mcp_arm(tmp_path / "ledger", "arm.env.MCP_TEST_STATE='{{ namespace_dir }}/state.json'", "arm.erase=null")
    assert arm.per_process

    async def body() -> None:
        await arm.ingest("conv-1", RECORDS)
        (folder,) = [Path(n) for n in arm.ledger.names]
        assert list(state(folder / "state.json").values()) == [["D1:1", "D1:2", "D2:1"]]
        assert [h.key for h in await arm.search("grey cat", 5)] == ["D1:1", "D1:2"]
        await arm.release("conv-1")
        assert not folder.exists()
        await arm.ingest("conv-2", RECORDS[2:])
        assert [h.key for h in await arm.search("cat", 5)] == []  # the new server holds conv-2 only

    on_loop(arm, body)
    arm.close()
    assert not arm.root.exists() and not list((tmp_path / "ledger").glob("*.json"))


@pytest.fixture(scope="module")
def tools():
    """The test server's tools, listed over a real session."""
    import asyncio

    async def listing():
        session = await McpSession.open(ServerSpec(command=sys.executable, args=[SERVER]), 20, 120)
        await session.aclose()
        return session.tools

    return asyncio.run(listing())


def test_arguments_failing_the_input_schema_name_the_argument(tools) -> None:
    op = ToolOperation("search", {"tool": "search", "arguments": {"namespace": "n", "query": "q", "k": "{{ query }}"},
                                  "result": "hits"})
    with pytest.raises(ArmError, match=r"arm.search.arguments: argument k of tool 'search' fails its "
                                       r"inputSchema: 'q' is not of type 'integer'"):
        ArgumentChecker(tools).check(op, op.render({"query": "q"}))
    op = ToolOperation("ingest", {"tool": "store", "arguments": {"namespace": "n", "records": [{"id": 1}]}})
    with pytest.raises(ArmError, match=r"argument records\[0\].id of tool 'store'.*1 is not of type 'string'"):
        ArgumentChecker(tools).check(op, op.render({}))


def test_an_unknown_tool_lists_the_tools_it_has(tools) -> None:
    ops = {"search": ToolOperation("search", {"tool": "find", "result": "hits"})}
    with pytest.raises(ArmError, match=r"arm.search.tool: the MCP server x has no tool 'find'; its tools: "
                                       r"erase, info, search, store, text_search"):
        check_tools(ops, tools, "x")


def test_server_fails_to_start_command_missing_or_exits_with_stderr(tmp_path) -> None:
    with pytest.raises(ArmError, match=r"MCP server command '/nonexistent/srv' was not found"):
        mcp_arm(tmp_path, "arm.command=/nonexistent/srv")
    with pytest.raises(ArmError, match=r"failed to start.*its stderr ended with: no licence file at /etc/x"):
        mcp_arm(tmp_path, "+arm.env.MCP_TEST_FAIL_START=no licence file at /etc/x")


def test_result_path_that_maps_nothing_shows_the_shape_and_text_content_is_parsed(tmp_path) -> None:
    arm = mcp_arm(tmp_path, "arm.search.tool=text_search", "arm.search.result='results[].{key: id}'")

    async def body() -> None:
        await arm.ingest("h", RECORDS)
        with pytest.raises(ArmError, match=r"arm.search.result 'results\[\].\{key: id\}' found nothing in the "
                                           r"result of tool 'text_search', which is an object with keys hits"):
            await arm.search("cat", 3)
        arm.ops["search"] = ToolOperation("search", {**{"tool": "text_search"},
                                                     "arguments": {"namespace": "{{ namespace }}", "query": "{{ query }}"},
                                                     "result": "hits[].{key: id, score: score}"})
        assert [h.key for h in await arm.search("grey cat", 3)] == ["D1:1", "D1:2"]  # JSON text content, no structured

    try:
        on_loop(arm, body)
    finally:
        arm.close()


def test_hanging_call_times_out_and_crash_shows_stderr(tmp_path) -> None:
    # The run's server counts its own calls (the set-up's server answered info and exited).
    arm = mcp_arm(tmp_path, "arm.timeout_s=1.5", "+arm.env.MCP_TEST_SLOW_QUERY=hang", "+arm.env.MCP_TEST_CRASH_AFTER=3")

    async def body() -> None:
        await arm.ingest("h", RECORDS)  # call 1
        with pytest.raises(ArmError, match=r"arm.search: tool 'search' did not answer within 1.5 s \(arm.timeout_s\)"):
            await arm.search("hang", 3)  # call 2
        await arm.search("cat", 3)  # a separate call still works: call 3
        with pytest.raises(ArmError, match=r"closed the connection during tool 'search' \(it exited or crashed\); "
                                           r"its stderr ended with: .*crashing on call 4"):
            await arm.search("cat", 3)

    try:
        on_loop(arm, body)
    finally:
        arm.close()


def test_result_document_prefers_structured_content(tools) -> None:
    class Result:
        structured_content = {"hits": [{"id": "a"}]}
        content = []

    op = ToolOperation("search", {"tool": "search", "result": "hits[].{key: id}"})
    assert map_result(op, Result()) == [{"key": "a"}]


def test_streamable_http_transport_with_a_token_from_the_environment(tmp_path, monkeypatch) -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, SERVER, "--http", str(port)], stderr=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, "the HTTP MCP server did not start"
            time.sleep(0.2)
        monkeypatch.delenv("MEMSRV_TOKEN", raising=False)
        url = f"http://127.0.0.1:{port}/mcp"
        with pytest.raises(ArmError, match="arm.auth_token_env: environment variable MEMSRV_TOKEN is not set"):
            mcp_arm(tmp_path, "arm.command=null", f"arm.url={url}", "arm.auth_token_env=MEMSRV_TOKEN")
        monkeypatch.setenv("MEMSRV_TOKEN", "s3cret")
        arm = mcp_arm(tmp_path, "arm.command=null", f"arm.url={url}", "arm.auth_token_env=MEMSRV_TOKEN")
        try:
            assert arm.describe()["mcp_transport"] == "http" and arm.base.headers == {"Authorization": "Bearer s3cret"}

            async def body() -> None:
                await arm.ingest("conv-1", RECORDS)
                assert [h.key for h in await arm.search("grey cat", 2)] == ["D1:1", "D1:2"]

            on_loop(arm, body)
        finally:
            arm.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_sessions_must_be_positive_and_are_for_a_shared_server(tmp_path) -> None:
    with pytest.raises(ArmError, match=r"arm.sessions=0: must be a positive integer"):
        mcp_arm(tmp_path, "arm.sessions=0")
    with pytest.raises(ArmError, match=r"arm.sessions > 1 is for a shared server"):
        mcp_arm(tmp_path, "arm.sessions=2", "arm.env.MCP_TEST_STATE='{{ namespace_dir }}/s.json'", "arm.erase=null")


def test_a_server_that_ignores_end_of_input_dies_with_a_killed_memrun(tmp_path) -> None:
    """kill -9 of memrun while it waits for a server that never answers and ignores the end
    of its input (and SIGPIPE, SIGHUP): the kernel kills the server (parent-death signal);
    it is not left running."""
    import os
    import signal
    import subprocess
    import time

    from conftest import memrun_exe

    pid_file = tmp_path / "server.pid"
    script = tmp_path / "deaf_server.py"
    script.write_text("import os, signal, sys, time\n"
                      "for s in (signal.SIGPIPE, signal.SIGHUP):\n    signal.signal(s, signal.SIG_IGN)\n"
                      f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                      "time.sleep(600)\n")
    env = {**os.environ, "MEMRUN_TESTS_DIR": str(TESTS), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen([*memrun_exe(), *overrides(tmp_path / "ledger"), f"arm.args=[{script}]",
                             "progress=false", f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.2)
    pid = int(pid_file.read_text())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] == "Z":  # dead, not yet reaped
                    return
        except OSError:
            return  # gone
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"the MCP server (pid {pid}) outlived memrun's kill -9")


def test_a_tool_schema_changed_mid_run_is_refused_when_a_shared_session_starts(tmp_path, monkeypatch) -> None:
    """Two sessions to a shared server (arm.sessions=2): the second starts after the server
    was upgraded (its search tool takes a new argument); the run stops there with the reason,
    as set-up would have."""
    switch = tmp_path / "upgraded"
    arm = mcp_arm(tmp_path / "ledger", "arm.sessions=2", f"+arm.env.MCP_TEST_SCHEMA_FILE={switch}")

    async def body() -> None:
        await arm.ingest("conv-1", RECORDS)  # the first session, as set-up saw the tools
        assert [h.key for h in await arm.search("grey cat", 2, history_id="conv-1")][:1] == ["D1:1"]
        switch.write_text("v2")
        with pytest.raises(ArmError, match="changed since the run started"):
            await arm.ingest("conv-2", RECORDS)  # the second session starts on the upgraded server

    on_loop(arm, body)
    arm.close()


def test_a_server_printing_non_json_on_stdout_is_one_line_with_a_count(tmp_path) -> None:
    """A stdio server that logs 10 lines to stdout (the protocol's channel) as it starts, twice
    (set-up and the run): the run completes, and says so once, with the count and the remedy;
    no traceback, and nothing calls it a hang."""
    import os
    import subprocess

    from conftest import memrun_exe

    env = {**os.environ, "MEMRUN_TESTS_DIR": str(TESTS), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([*memrun_exe(), *overrides(tmp_path / "ledger"), "+arm.env.MCP_TEST_NOISE=10",
                           "progress=false", f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if "not JSON-RPC" in ln]
    assert len(lines) == 1 and "printed 20 lines on its stdout" in lines[0], done.stderr
    assert "(the first: 'debug: starting, step 0')" in lines[0] and "must write its logs to stderr" in lines[0]
    assert "Traceback" not in done.stderr and "did not answer" not in done.stderr and "hang" not in done.stderr
    assert lines[0].removeprefix("warning: ") in read_run(tmp_path / "run").instrument.warnings  # saved as printed


def _projects_arm(ledger: Path, home: Path):
    """arm=mcp on tests/servers/projects_server.py, whose tools take only the project id it issues."""
    from memrun.arms.mcp import McpArm

    return McpArm(command=sys.executable, args=[str(TESTS / "servers" / "projects_server.py")],
                  env={"HOME": str(home), "MCP_TEST_IDS_ONLY": "1"}, ledger_dir=str(ledger),
                  create={"tool": "create_memory_project", "result": "external_id",
                          "arguments": {"project_name": "{{ namespace }}", "project_path": "{{ namespace_dir }}"}},
                  ingest={"tool": "write_note", "per_record": True, "arguments": {
                      "project_id": "{{ namespace_id }}", "title": "{{ record.key }}", "content": "{{ record.text }}",
                      "directory": "memrun"}},
                  search={"tool": "search_notes", "result": "result.results[].{key: title, text: content}",
                          "arguments": {"project_id": "{{ namespace_id }}", "query": "{{ query }}",
                                        "page_size": "{{ k }}", "output_format": "json"}},
                  erase={"tool": "delete_project", "arguments": {"project_name": "{{ namespace }}",
                                                                 "delete_notes": True}})


def test_a_namespace_the_server_issues_is_used_by_later_calls_and_erased_after_a_kill(tmp_path) -> None:
    """create once per history on a folder of memrun's; its answer's id is what ingest and search
    send; the ledger records '<namespace> id=<id>', so when the run dies (its ledger left with a
    dead pid) the next arm erases the project (by name, as the erase tool takes it)."""
    home, ledger = tmp_path / "home", tmp_path / "ledger"
    registry = home / ".projects-test" / "config.json"
    arm = _projects_arm(ledger, home)
    hits = []

    async def body() -> None:
        await arm.ingest("conv-1", RECORDS)
        hits.extend(await arm.search("what is the cat called", 3, history_id="conv-1"))

    on_loop(arm, body)
    (project,) = json.loads(registry.read_text()).values()
    assert [h.key for h in hits][:1] == ["D1:2"] and Path(project["path"]).is_dir()
    (entry,) = arm.ledger.names
    name = next(iter(json.loads(registry.read_text())))
    assert entry == f"{name} id={project['id']}" and Path(project["path"]).parent.name == "created"
    dead = json.loads(arm.ledger.path.read_text()) | {"pid": 2 ** 22 + 12345}  # a pid no process holds
    arm.ledger.names.clear()  # the dead run erased nothing
    arm.close()
    (ledger / f"{dead['host']}-{dead['pid']}-dead.json").write_text(json.dumps(dead))
    assert json.loads(registry.read_text()) != {}
    again = _projects_arm(ledger, home)
    again.close()
    assert json.loads(registry.read_text()) == {}
