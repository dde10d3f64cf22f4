"""``memrun --help`` and ``memrun --cfg job``: what they list and what their start-up imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memrun import cli

# What a process that only prints help or the composed config must not import: the run,
# its table and statistics, sweeps, arms, benchmarks, reports (they bring numpy, pyarrow,
# rich), nor those libraries themselves. memrun's CLI, config schemas, redaction and the
# launcher (Hydra's task function) are all it needs.
NOT_AT_START_UP = ("memrun.pipeline.run", "memrun.jobs.sweep", "memrun.core.instrument", "memrun.io.writer", "memrun.io.reader",
                   "memrun.stats", "memrun.arms", "memrun.benchmarks", "memrun.report", "memrun.comparison",
                   "memrun.llm", "memrun.judges", "memrun.accuracy", "memrun.pipeline.one_history", "memrun.view")
HEAVY = ("numpy", "pyarrow", "scipy", "pandas", "rich", "jinja2", "aiohttp", "httpx", "bm25s", "ijson")

_IMPORTS = """
import contextlib, io, json, sys
from memrun import cli
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        code = cli.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code or 0
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def _start_up(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, *args], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["--cfg", "job"], ["--cfg", "job", "arm=http", "benchmark=longmemeval"]])
def test_help_and_cfg_job_import_no_numpy_pyarrow_or_run_modules(args):
    seen = _start_up(*args)
    assert seen["code"] == 0 and seen["out"]
    modules = set(seen["modules"])
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    barred = [m for m in modules if any(m == p or m.startswith(p + ".") for p in NOT_AT_START_UP)]
    assert barred == [], sorted(m for m in modules if m.startswith("memrun"))


def test_help_lists_every_subcommand():
    text = _start_up("--help")["out"]
    missing = [name for name in cli.SUBCOMMANDS if f"memrun {name} " not in text]
    assert missing == []
    assert "memrun arm init mcp|http" in text and "memrun view [DIR]" in text


def _help(capsys, args: list[str]) -> str:
    with pytest.raises(SystemExit) as ended:
        cli.main(args)
    assert ended.value.code in (0, None)
    return capsys.readouterr().out


def test_help_lists_a_group_a_user_adds_under_config_dir_as_hydra_does(tmp_path, capsys, monkeypatch):
    (tmp_path / "retriever").mkdir()
    (tmp_path / "retriever" / "fast.yaml").write_text("k: 1\n")
    (tmp_path / "retriever" / "slow.yaml").write_text("k: 2\n")
    (tmp_path / "retriever" / "deep").mkdir()
    (tmp_path / "retriever" / "deep" / "x.yaml").write_text("k: 3\n")
    (tmp_path / "arm").mkdir()
    (tmp_path / "arm" / "mine.yaml").write_text("defaults:\n  - bm25\n  - _self_\nname: mine\n")
    args = ["--config-dir", str(tmp_path), "--help"]
    quick = _help(capsys, args)
    groups = quick.split("== Config groups")[1].split("== Config (")[0].splitlines()
    assert "retriever: fast, slow" in groups and "retriever/deep: x" in groups
    assert any(line.startswith("arm: ") and "mine" in line.split(": ")[1].split(", ") for line in groups)
    # Hydra's own listing, one repository per question: the same text
    monkeypatch.setattr(cli, "_one_repository_for_help", lambda args: lambda: None)
    assert _help(capsys, args) == quick
