"""``memrun arm init mcp``: a starter config from the server's own tool list, which passes
its own three-record smoke test, on the tests' server and on both real third-party servers."""

from __future__ import annotations

import sys

import pytest
import yaml
from hydra import compose, initialize_config_dir

from arms.support import TESTS
from arms.test_arms_mcp_real import server_command
from memrun.cli import main as cli_main
from memrun.config import register


def init(tmp_path, capsys, *argv: str) -> tuple[int, str, dict]:
    code = cli_main(["arm", "init", "mcp", "--out", str(tmp_path / "conf" / "arm"), *argv])
    out = capsys.readouterr().out
    (path,) = (tmp_path / "conf" / "arm").glob("*.yaml")
    return code, out, yaml.safe_load(path.read_text())


def test_init_on_the_tests_server_and_the_config_composes(tmp_path, capsys) -> None:
    code, out, config = init(tmp_path, capsys, "--name", "mine", "--", sys.executable,
                             str(TESTS / "servers" / "mcp_server.py"))
    assert code == 0 and "smoke test: passed: searching 'cello' found smoke:3" in out, out
    assert config["ingest"] == {"tool": "store", "record": {"id": "{{ record.key }}", "text": "{{ record.text }}"},
                                "arguments": {"namespace": "{{ namespace }}", "records": "{{ records }}"}}
    assert config["search"]["arguments"] == {"namespace": "{{ namespace }}", "query": "{{ query }}", "k": "{{ k }}"}
    assert config["search"]["result"] == "hits[].{key: id, score: score, text: text}"
    assert config["erase"] == {"tool": "erase", "arguments": {"namespace": "{{ namespace }}"}}
    register()  # the written file is a config memrun composes: memrun --config-dir <dir> arm=mine
    with initialize_config_dir(config_dir=str(TESTS.parent / "conf"), version_base=None):
        cfg = compose("config", overrides=["arm=mine", f"hydra.searchpath=[file://{tmp_path / 'conf'}]"])
    assert cfg.arm._target_ == "memrun.arms.mcp.McpArm" and cfg.arm.search.tool == "search"


def test_init_refuses_to_overwrite_and_says_what_it_needs(tmp_path, capsys) -> None:
    assert cli_main(["arm", "init", "mcp"]) == 2
    assert "give the server's command after -- or --url URL" in capsys.readouterr().err


@pytest.mark.parametrize("arm", ["mcp_server_memory", "mcp_logbook"])
def test_init_on_real_servers_passes_its_smoke_test(arm, tmp_path, capsys) -> None:
    command = str(server_command(arm))
    argv = (["--env", "MEMORY_FILE_PATH={{ namespace_dir }}/memory.jsonl", "--", command] if arm == "mcp_server_memory"
            else ["--", command, "--db", "{{ namespace_dir }}/logbook.db"])
    code, out, config = init(tmp_path, capsys, *argv)
    assert code == 0 and "smoke test: passed" in out, out
    if arm == "mcp_server_memory":
        assert config["ingest"]["tool"] == "create_entities" and config["search"]["tool"] == "search_nodes"
        assert config["search"]["result"] == "entities[].{key: name, text: observations[0]}"
    else:
        assert config["ingest"]["arguments"]["type"] == "fact"  # from the tool's description, marked GUESSED
        assert config["search"]["result"] == "memories[].{key: entity, text: content}"
        assert "# GUESSED: type:" in next((tmp_path / "conf" / "arm").glob("*.yaml")).read_text()


# (server, its arguments, the package init must name, where the server keeps its store by default
# relative to (its install folder | the working folder | HOME))
REAL = {
    "mcp_server_memory": ([], "@modelcontextprotocol/server-memory 2026.8.31"),
    "mcp_logbook": ([], "agent-logbook 0.1.1"),
    "mcp_local_memory": (["serve"], "local-memory 0.2.0"),
}


def files_under(*folders):
    """path -> bytes of every file under ``folders`` (absent folders hold nothing)."""
    return {p: p.read_bytes() for f in folders if f.exists() for p in sorted(f.rglob("*")) if p.is_file()}


@pytest.mark.realdata
@pytest.mark.parametrize("arm", list(REAL))
def test_init_without_hints_writes_a_config_that_runs_locomo_unedited(arm, tmp_path, data_dir) -> None:
    """No --env, no {{ namespace_dir }}: init finds the server's storage variable by what its
    probe server wrote, names the installed package as server_build, leaves the server's own
    store (its install folder, the working folder, HOME) byte-identical and no temporary
    folder behind, and its last line is the command that runs LoCoMo through the config."""
    from conftest import run_memrun
    from memrun.io.reader import read_run

    command = server_command(arm)
    extra, build = REAL[arm]
    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work, home, tmp):
        folder.mkdir()
    install = command.resolve().parents[2] if arm == "mcp_server_memory" else command.parents[1]
    before = files_under(install, home)
    env = {"HOME": str(home), "TMPDIR": str(tmp), "MEMRUN_DATA_DIR": str(data_dir)}
    done = run_memrun(["arm", "init", "mcp", "--", str(command), *extra], work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("memrun --config-dir conf arm=") and last.endswith(" benchmark=locomo"), done.stdout
    config = yaml.safe_load(next((work / "conf" / "arm").glob("*.yaml")).read_text())
    assert config["server_build"] == build and "{{ namespace_dir }}" in str(config["env"])
    run = run_memrun([*last.split()[1:], "benchmark.limit=12", "progress=false", "hydra.run.dir=run",
                      f"arm.ledger_dir={tmp_path / 'ledger'}"], work, env)
    assert run.returncode == 0, run.stderr
    instrument = read_run(work / "run").instrument
    assert instrument.server_build.startswith(f"{build}; tools sha256:")
    summary = (work / "run" / "summary.json").read_text()
    assert '"n_searches": 12' in summary
    if arm != "mcp_server_memory":  # keyword servers find things; server-memory's whole-question substring does not
        assert '"n_hits": 0' not in summary
    assert files_under(install, home) == before  # the server's own store: untouched
    assert sorted(p.name for p in work.iterdir()) == ["conf", "run"]  # nothing in the working folder
    assert list(tmp.iterdir()) == []  # no temporary folder left


GLOBAL_STORE_SERVER = """
import json, sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("one-global-store", version="1.0")
STORE = sys.argv[1]  # a fixed path memrun is not told about


@server.tool()
async def remember(content: str, key: str) -> dict:
    \"\"\"Store a memory.\"\"\"
    with open(STORE, "a") as f:
        f.write(json.dumps({"key": key, "content": content}) + "\\n")
    return {"ok": True}


@server.tool()
async def search(query: str) -> dict:
    \"\"\"Search memories.\"\"\"
    rows = [json.loads(line) for line in open(STORE)]
    return {"hits": [r for r in rows if any(w in r["content"] for w in query.split())]}


server.run()
"""


def test_init_refuses_before_writing_when_it_cannot_isolate(tmp_path, capsys) -> None:
    """A server with one global store at a path nobody hands it (no erase tool, no storage
    variable): no config is written, one line says what to add, the notes so far are printed."""
    script = tmp_path / "server.py"
    script.write_text(GLOBAL_STORE_SERVER)
    code = cli_main(["arm", "init", "mcp", "--out", str(tmp_path / "conf" / "arm"), "--", sys.executable,
                     str(script), str(tmp_path / "elsewhere.jsonl")])
    captured = capsys.readouterr()
    assert code == 2 and not (tmp_path / "conf").exists()
    assert "add its storage path under {{ namespace_dir }}" in captured.err and "\n" not in captured.err.strip()
