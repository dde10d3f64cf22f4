"""``memrun arm init mcp``: a starter config from the server's own tool list, which passes
its own three-record smoke test, on the tests' server and on both real third-party servers."""

from __future__ import annotations

import sys

import pytest
import yaml
from arms.support import TESTS
from arms.test_arms_mcp_real import server_command
from hydra import compose, initialize_config_dir

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
        assert "# GUESSED: type:" in (tmp_path / "conf" / "arm" / "mcp_logbook.yaml").read_text()
