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
    mine = home / ".cache" / "memrun"  # memrun's own user cache (compositions, compiled dataclass code)
    after = {p: data for p, data in files_under(install, home).items() if mine not in p.parents}
    assert after == before  # the server's own store: untouched
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


def test_a_store_path_in_the_arguments_goes_under_namespace_dir_and_is_never_written(tmp_path, capsys) -> None:
    """A server with one global store at a path in its arguments (no erase tool, no storage
    variable): the probe server got a stand-in path in memrun's sandbox, wrote its store there,
    so the written config puts that argument under {{ namespace_dir }}; the path given was never
    written (the smoke records never reached it)."""
    script = tmp_path / "server.py"
    script.write_text(GLOBAL_STORE_SERVER)
    store = tmp_path / "elsewhere.jsonl"
    code, out, config = init(tmp_path, capsys, "--name", "one", "--", sys.executable, str(script), str(store))
    assert code == 0 and "smoke test: passed" in out, out
    assert config["args"] == [str(script), "{{ namespace_dir }}/elsewhere.jsonl"]
    assert f"isolation: a fresh server per history, its store {store} -> {{{{ namespace_dir }}}}/elsewhere.jsonl" in out
    assert not store.exists()


STORE_AT_START_SERVER = """
import json
from mcp.server.mcpserver import MCPServer

server = MCPServer("fixed-store", version="1.0")
STORE = open(%r, "a")  # opened at start, at a path written into the program, as a SQLite server does


@server.tool()
async def remember(content: str, key: str) -> dict:
    \"\"\"Store a memory.\"\"\"
    STORE.write(json.dumps({"key": key, "content": content}) + "\\n")
    STORE.flush()
    return {"ok": True}


@server.tool()
async def search(query: str) -> dict:
    \"\"\"Search memories.\"\"\"
    return {"hits": []}


server.run()
"""


def test_init_refuses_before_any_record_when_the_server_writes_outside_its_sandbox(tmp_path) -> None:
    """A server that opens its store at start at a path nobody hands it (in the folder memrun
    runs in): init sees the write before storing anything, stores nothing, writes no config
    and says in one line where it wrote and what to do."""
    from conftest import run_memrun

    work = tmp_path / "work"
    work.mkdir()
    store = work / "fixed-store.jsonl"
    script = tmp_path / "server.py"
    script.write_text(STORE_AT_START_SERVER % str(store))
    done = run_memrun(["arm", "init", "mcp", "--", sys.executable, str(script)], work, {"HOME": str(tmp_path)})
    assert done.returncode == 2, done.stdout + done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert str(store) in error and "none was stored" in error and "{{ namespace_dir }}" in error, error
    assert store.read_text() == ""  # the smoke records never reached it
    assert not (work / "conf").exists()


PROJECTS = [sys.executable, str(TESTS / "servers" / "projects_server.py")]


def test_init_on_a_server_of_projects_picks_tools_by_schema(tmp_path, capsys, monkeypatch) -> None:
    """basic-memory's shape (tests/servers/projects_server.py): the search that takes the query
    (search_notes, not the `search` adapter that refuses other clients, nor `find`), the delete
    that removes a whole project (delete_project, its notes too; not delete_note), a create per
    history on a folder of memrun's, JSON output where offered; the smoke test leaves the
    server's registry in HOME untouched."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, out, config = init(tmp_path, capsys, "--name", "projects", "--", *PROJECTS)
    assert code == 0 and "smoke test: passed" in out, out
    assert config["create"] == {"tool": "create_memory_project", "arguments": {
        "project_name": "{{ namespace }}", "project_path": "{{ namespace_dir }}"}}
    assert config["ingest"]["tool"] == "write_note" and config["ingest"]["arguments"]["project"] == "{{ namespace }}"
    assert config["search"] == {"tool": "search_notes", "arguments": {
        "project": "{{ namespace }}", "query": "{{ query }}", "page_size": "{{ k }}", "output_format": "json"},
        "result": "result.results[].{key: title, text: content, score: score}"}
    assert config["erase"] == {"tool": "delete_project", "arguments": {"project_name": "{{ namespace }}",
                                                                       "delete_notes": True}}
    assert not (tmp_path / "home").exists()  # init's servers ran in sandboxes: no registry was made here


def test_init_on_a_server_that_issues_namespace_ids(tmp_path, capsys, monkeypatch) -> None:
    """Tools that take only the project id the create tool returned: create.result is the path to
    it and ingest/search send {{ namespace_id }}."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, out, config = init(tmp_path, capsys, "--name", "ids", "--env", "MCP_TEST_IDS_ONLY=1", "--", *PROJECTS)
    assert code == 0 and "smoke test: passed" in out, out
    assert config["create"]["result"] == "external_id"
    assert config["ingest"]["arguments"]["project_id"] == "{{ namespace_id }}"
    assert config["search"]["arguments"]["project_id"] == "{{ namespace_id }}"
    assert "create.result: external_id, the id the server issued" in out


@pytest.mark.realdata
@pytest.mark.parametrize("ids", [False, True])
def test_a_config_for_a_server_of_projects_runs_locomo_unedited(ids, tmp_path, data_dir) -> None:
    """The written config runs a LoCoMo slice as written: one project per history, created on a
    folder of memrun's and deleted (with its notes) after; the server's registry in HOME holds
    no project at the end, and no folder is left in TMPDIR."""
    import json

    from conftest import run_memrun
    from memrun.io.reader import read_run

    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work, home, tmp):
        folder.mkdir()
    env = {"HOME": str(home), "TMPDIR": str(tmp), "MEMRUN_DATA_DIR": str(data_dir)}
    extra = ["--env", "MCP_TEST_IDS_ONLY=1"] if ids else []
    done = run_memrun(["arm", "init", "mcp", "--name", "projects", *extra, "--", *PROJECTS], work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last == "memrun --config-dir conf arm=projects benchmark=locomo"
    run = run_memrun([*last.split()[1:], "benchmark.limit=30", "progress=false", "hydra.run.dir=run"], work, env)
    assert run.returncode == 0, run.stderr
    table = read_run(work / "run").table
    assert table.num_rows == 30 and sum(table.column("n_retrieved").to_pylist()) > 0
    assert json.loads((home / ".projects-test" / "config.json").read_text()) == {}
    assert list(tmp.iterdir()) == []
