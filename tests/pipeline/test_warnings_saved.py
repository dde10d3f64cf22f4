"""Every warning a run prints is saved with it, in order (memrun.core.run_warnings).

Runs that hit each kind of warning said away from the run loop: rows that failed, the
http arm's failed erases and the namespaces it erased for earlier runs (killed, or
ended with a server that failed), and an earlier unfinished run of the same
configuration. For each, the ``warning:`` lines on stderr equal ``summary.json``'s
``warnings`` and the instrument's.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from conftest import run_after_a_killed_one, run_dirs, run_memrun
from memrun.io.reader import read_run


def printed_and_saved(stderr: str, folder: Path) -> tuple[list[str], list[str], list[str]]:
    """(warning lines printed, summary.json's warnings, the instrument's warnings)."""
    printed = [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: ")]
    summary = json.loads((folder / "summary.json").read_text())["warnings"]
    return printed, summary, read_run(folder).instrument.warnings


def newest(root: Path, seen: set[Path]) -> Path:
    (folder,) = [f for f in run_dirs(root) if f not in seen]
    seen.add(folder)
    return folder


def test_http_arm_warnings_and_failed_rows_are_saved_as_printed(memory, tmp_path):
    state, url = memory
    args = ["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path / 'ledger'}", "arm.attempts=1",
            "progress=false"]
    seen: set[Path] = set()

    # One search fails (an item's error) and the server erases nothing.
    state.fail["search"] = [500]
    state.fail["erase"] = [500] * 100
    first = run_memrun(args, tmp_path)
    assert first.returncode == 0, first.stderr
    printed, summary, instrument = printed_and_saved(first.stderr, newest(tmp_path / "outputs", seen))
    assert printed == summary == instrument
    assert any(w.startswith("1 of 30 rows failed") for w in printed)
    assert any(w.startswith("could not erase namespace") for w in printed)
    assert any(re.match(r"could not erase (\d+) of the \1 namespaces", w) for w in printed)

    # A run killed with -9 leaves a ledger naming a dead process (the first run's).
    (ledger,) = (tmp_path / "ledger").glob("*.json")
    killed = json.loads(ledger.read_text())
    killed.pop("unerased")
    killed["namespaces"] = ["memrun-killed-x"]
    (tmp_path / "ledger" / f"{socket.gethostname()}-{killed['pid']}-killed.json").write_text(json.dumps(killed))
    state.fail.clear()
    second = run_memrun(args, tmp_path)
    assert second.returncode == 0, second.stderr
    printed, summary, instrument = printed_and_saved(second.stderr, newest(tmp_path / "outputs", seen))
    assert printed == summary == instrument
    assert any(w.startswith("erased 1 namespaces left on") and "killed" in w for w in printed), printed
    assert any(re.match(r"erased [1-9]\d* namespaces on .* that an earlier run could not erase", w) for w in printed)


def test_an_unfinished_earlier_run_is_saved_as_printed(tmp_path):
    again = run_after_a_killed_one(tmp_path)
    printed, summary, instrument = printed_and_saved(again.stderr, tmp_path / "runs" / "again")
    assert printed == summary == instrument
    assert any(w.startswith("resuming ") and "did not finish" in w for w in printed)


def test_a_warning_is_printed_and_kept_in_one_call(capsys):
    from memrun.core.redaction import Redactor
    from memrun.core.run_warnings import RunWarnings, warn

    run = RunWarnings(redactor=Redactor(["secret-value-1"]))
    with run.active():
        warn("first", None, "with secret-value-1 in it")
        run.warn("", "second")
    warn("outside any run")
    err = capsys.readouterr().err.splitlines()
    assert run.lines == ["first", "with *** in it", "second"]
    assert err == [f"warning: {line}" for line in [*run.lines, "outside any run"]]
