"""The command line's edges: a reader closing stdout early, and a first argument that is
neither a subcommand nor an override."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import memrun_exe
from memrun.cli import EXIT_STDOUT_CLOSED, SUBCOMMANDS
from memrun.cli import main as cli_main
from run_tables import accuracy_run


@pytest.fixture
def wrong_run(tmp_path):
    """An accuracy run with 3,000 wrong items: far more output than a pipe buffers."""
    return accuracy_run(tmp_path / "run", {f"item-{i:05d}-{'x' * 80}": ["wrong"] for i in range(3000)})


@pytest.mark.parametrize("extra", [["--json"], []], ids=["json", "table"])
def test_a_reader_that_closes_stdout_early_ends_the_command_quietly(wrong_run, extra):
    # memrun failures RUN --json | head -c 600
    proc = subprocess.Popen([*memrun_exe(), "failures", str(wrong_run), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "120"})
    assert len(proc.stdout.read(600)) == 600
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=180) == EXIT_STDOUT_CLOSED
    assert err == ""  # no traceback, no "Exception ignored ... BrokenPipeError"


@pytest.mark.parametrize("args", [["--help"], ["--cfg", "job"]], ids=["help", "cfg"])
def test_a_reader_gone_before_hydra_prints_ends_quietly(tmp_path, args):
    # memrun --help | head -1: Hydra prints after the reader left; the pipe is not an output folder
    proc = subprocess.Popen([*memrun_exe(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=180) == EXIT_STDOUT_CLOSED, err
    assert err == ""


def test_a_broken_pipe_that_is_not_stdout_keeps_its_traceback(monkeypatch):
    import memrun.cli as cli

    def broken(*args):
        raise BrokenPipeError("a server's socket")

    monkeypatch.setattr(cli, "_main", broken)
    with pytest.raises(BrokenPipeError):
        cli_main(["compare"])


@pytest.mark.parametrize("word, hint", [("comapre", "compare"), ("validat", "validate"), ("failure", "failures"),
                                        ("reprot", "report"), ("merg", "merge")])
def test_a_misspelt_subcommand_is_named(capsys, word, hint):
    assert cli_main([word, "a", "b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"memrun: error: unknown command '{word}'; did you mean 'memrun {hint}'?")
    assert "\n" not in err and "override" not in err


def test_a_bare_word_is_neither_command_nor_override(capsys):
    assert cli_main(["frobnicate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memrun: error: 'frobnicate' is neither a command nor an override; commands: ")
    assert all(name in err for name in SUBCOMMANDS) and "key=value" in err


def test_an_override_is_still_an_override(capsys):
    assert cli_main(["benchmark=locomoo"]) == 2
    assert "benchmark=locomoo: no such config (did you mean benchmark=locomo?)" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--cfg", "job", "-m", "arm=bm25,hybrid"], ["-c", "job", "--multirun"],
                                  ["--info", "config", "--cfg=job"]])
def test_two_hydra_modes_are_one_line_not_a_traceback(capsys, argv):
    """``memrun --cfg job -m`` ended in Hydra's bare ValueError traceback."""
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "cannot be combined: give one of -m, --run, --cfg, --info" in err and "Traceback" not in err


@pytest.mark.parametrize("group", ["arm", "arm/embedder"])
def test_a_group_set_to_null_is_named_with_its_fix(capsys, tmp_path, monkeypatch, group):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["seed=null", f"{group}=null"]) == 2  # seed=null: a value, not the group at fault
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"memrun: error: {group}=null: a config group's choice cannot be null on the command line; "
                   f"remove it with '~{group}'")  # arm=null said "group=null ... '~group'"
