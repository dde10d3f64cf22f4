"""A --config-dir file named like one of memrun's own is refused, not silently ignored
(memrun.config.user_dir): Hydra reads memrun's conf/ first."""

from __future__ import annotations

import shutil

import pytest

from memrun.config.user_dir import config_dir_problem
from memrun.core.paths import conf_dir
from tests.conftest import run_memrun


def _edited_bm25(folder):
    (folder / "arm").mkdir(parents=True)
    text = (conf_dir() / "arm" / "bm25.yaml").read_text()
    assert "k1: 1.5" in text
    (folder / "arm" / "bm25.yaml").write_text(text.replace("k1: 1.5", "k1: 0.1"))


def test_a_shadowed_file_is_named_with_its_fix(tmp_path):
    _edited_bm25(tmp_path)
    problem = config_dir_problem(tmp_path)
    assert problem is not None
    for needle in (str(tmp_path), "arm/bm25.yaml", "silently ignored", "arm/bm25_mine.yaml", "arm=bm25_mine"):
        assert needle in problem


def test_many_shadowed_files_are_counted(tmp_path):
    for name in ("bm25", "dense", "hybrid", "oracle", "full_context"):
        (tmp_path / "arm").mkdir(exist_ok=True)
        (tmp_path / "arm" / f"{name}.yaml").write_text("name: mine\n")
    problem = config_dir_problem(tmp_path)
    assert problem is not None and "arm/bm25.yaml, arm/dense.yaml, arm/full_context.yaml (and 2 more) have" in problem


def test_the_primary_config_is_shadowed_too(tmp_path):
    (tmp_path / "config.yaml").write_text("defaults: []\n")
    problem = config_dir_problem(tmp_path)
    assert problem is not None and ": config.yaml has the name" in problem and "--config-name config_mine" in problem


@pytest.mark.parametrize("case", ["own names", "identical copy", "memrun's conf", "missing"])
def test_what_passes_and_what_is_missing(tmp_path, case):
    folder = tmp_path / "conf"
    if case == "own names":
        (folder / "arm").mkdir(parents=True)
        (folder / "arm" / "keyword.yaml").write_text("_target_: x.Y\n")
        (folder / "benchmark").mkdir()
        (folder / "benchmark" / "mine.yaml").write_text("name: mine\n")
    elif case == "identical copy":
        (folder / "arm").mkdir(parents=True)
        shutil.copy(conf_dir() / "arm" / "bm25.yaml", folder / "arm" / "bm25.yaml")
    elif case == "memrun's conf":
        folder = conf_dir()
    problem = config_dir_problem(folder)
    assert problem == (f"--config-dir {folder}: no such folder" if case == "missing" else None)


@pytest.mark.parametrize("command", [[], ["plan"]])
def test_the_command_line_refuses_before_composing(tmp_path, command):
    _edited_bm25(tmp_path / "conf")
    done = run_memrun([*command, "--config-dir", str(tmp_path / "conf"), "arm=bm25"], tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("memrun: error: --config-dir ") and "arm/bm25.yaml" in line
