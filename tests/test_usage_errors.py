"""Usage errors look the same in every subcommand (memrun.commands.usage): a bad flag, a
missing argument, a value of the wrong type, or a call wrong in a way the parser cannot see
print two lines on stderr, ``memrun <subcommand>: error: <message>`` and the one-line usage,
nothing on stdout but compare's own document, and exit with the command's usage code (2; 4
for memrun compare and null-band, whose 2 means unresolved)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from memrun import cli

# subcommand -> (a bad call, the program named in the error line, a piece of the message)
BAD_CALLS: dict[str, tuple[list[str], str, str]] = {
    "compare": (["compare", "--no-such-flag"], "memrun compare", "unrecognized arguments: --no-such-flag"),
    "null-band": (["null-band", "only-one"], "memrun null-band", "required: a2"),
    "validate": (["validate"], "memrun validate", "required: file"),
    "datasets": (["datasets", "synth", "out.jsonl", "--size", "huge"], "memrun datasets synth", "invalid choice: 'huge'"),
    "failures": (["failures", "run", "--limit", "many"], "memrun failures", "invalid int value: 'many'"),
    "calibrate-judge": (["calibrate-judge"], "memrun calibrate-judge", "required: --out"),
    "sweep": (["sweep", "--format", "pdf", "dir"], "memrun sweep", "invalid choice: 'pdf'"),
    "merge": (["merge"], "memrun merge", "required: run"),
    "cache": (["cache", "merge", "only-one"], "memrun cache merge", "at least one SRC folder and a DEST folder"),
    "report": (["report", "a", "b", "c"], "memrun report", "not 3 paths"),
    "plan": (["plan", "--no-such-flag"], "memrun plan", "unrecognized arguments: --no-such-flag"),
    "arm": (["arm", "init", "mcp"], "memrun arm init", "give the server's command after -- or --url URL"),
    "view": (["view", ".", "--port", "99999"], "memrun view", "--port 99999: choose 0..65535"),
    "gallery": (["gallery", "run", "--no-such-flag"], "memrun gallery", "unrecognized arguments: --no-such-flag"),
}
USAGE_CODE = {"compare": 4, "null-band": 4}


def _run(argv: list[str]) -> int:
    """cli.main's exit code, whether the usage error returned it or raised SystemExit."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_every_subcommand_has_a_bad_call_here():
    assert sorted(BAD_CALLS) == sorted(cli.SUBCOMMANDS)


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_a_bad_call_prints_the_error_line_and_the_usage_and_exits_with_the_usage_code(name, capsys, tmp_path,
                                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing a bad call might write lands in the repository
    argv, prog, piece = BAD_CALLS[name]
    assert _run(argv) == USAGE_CODE.get(name, 2)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2, captured.err
    assert lines[0].startswith(f"{prog}: error: ") and piece in lines[0], lines[0]
    assert re.fullmatch(rf"usage: {re.escape(prog)} .*(--help).*", lines[1]), lines[1]
    if name != "compare":  # compare writes its --format document on stdout even for a usage error
        assert captured.out == ""


def test_the_process_exit_code_and_stderr_as_a_user_sees_them(tmp_path):
    done = subprocess.run([sys.executable, "-m", "memrun", "validate", "--max-errors", "x", "f.jsonl"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[0] == "memrun validate: error: argument --max-errors: invalid int value: 'x'"
    assert done.stderr.splitlines()[1].startswith("usage: memrun validate [-h] ")


@pytest.mark.parametrize("argv, piece", [
    (["failures", "run", "--limit", "-1"], "argument --limit: -1 is not a whole number >= 0"),  # was [:-1]: the last item hidden
    (["failures", "run", "--hits", "-2"], "argument --hits: -2 is not a whole number >= 0"),
    (["failures", "run", "--k", "0"], "argument --k: 0 is not a whole number >= 1"),  # was a ValueError traceback
    (["validate", "f.jsonl", "--max-errors", "0"], "argument --max-errors: 0 is not a whole number >= 1"),
])
def test_a_count_out_of_range_is_a_usage_error(argv, piece, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _run(argv) == 2
    assert piece in capsys.readouterr().err.splitlines()[0]
