"""Ctrl-C and SIGTERM always end a run as interrupted (exit 130) with every finished row
kept exactly once: the real CLI in a subprocess, signalled at many points."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import memrun_exe, run_dirs
from memrun.io.reader import read_run
from servers.openai_server import OpenAIServer

TRIALS = 24


def _accuracy_env(server: OpenAIServer) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef"}


def _accuracy_run_args(tmp_path: Path, run: str = "run") -> list[str]:
    return ["axis=accuracy", "judge=gpt41", "repeats=3", "concurrency=16", "progress=false",
            f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / run}"]


def _accuracy_run(tmp_path: Path, server: OpenAIServer) -> subprocess.Popen[str]:
    return subprocess.Popen([*memrun_exe(), *_accuracy_run_args(tmp_path)], cwd=tmp_path, env=_accuracy_env(server),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check(run_dir: Path, code: int, alive: bool, done: bool, err: str, sig: int) -> str:
    """The invariants of one trial; returns the run's status. ``done``: the run had written
    its summary (its work was over) when the signal was sent."""
    run = read_run(run_dir)
    keys = list(zip(run.table.column("item_id").to_pylist(), run.table.column("repeat").to_pylist()))
    assert len(keys) == len(set(keys)), "an (item_id, repeat) was written twice"
    if run.complete:
        assert run.instrument.n_rows == run.table.num_rows
    if alive and done:  # it reached a process finishing a complete run: 130, or the exit's own fate
        assert code in (130, 0, -sig), (code, err[-2000:])
        assert run.instrument.status == "complete" and run.table.num_rows == 90
        return "complete"
    if alive:  # the signal reached a running memrun: it must say interrupted, whatever phase it hit
        assert code == 130, (code, err[-2000:])
        assert "interrupted; the rows that finished are in" in err and "Traceback" not in err
        assert "go on from them (resume=false starts over), and the LLM calls already made come from the call cache" in err
        assert run.instrument.status in ("interrupted", "complete")  # complete: it hit the final merge
        if run.instrument.status == "complete":
            assert run.table.num_rows == 90
    else:
        assert code == 0 and run.instrument.status == "complete" and run.table.num_rows == 90
    return run.instrument.status


def _signal_frozen(proc: subprocess.Popen[str], summary: Path, sig: int) -> tuple[bool, bool]:
    """Send ``sig`` to a live ``proc``; returns (its summary existed when the signal was sent,
    it was alive). The process is stopped (SIGSTOP) while its summary is looked for and the
    signal sent, so a run that writes its summary in between (a stalled test process on a
    loaded machine) is not taken for one the signal found still working."""
    if proc.poll() is not None:
        return summary.exists(), False
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        done = summary.exists()
        proc.send_signal(sig)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    return done, True


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_at_any_point_ends_interrupted_with_every_row_once(tmp_path, sig):
    rng = random.Random(1234 + sig)
    statuses = []
    with OpenAIServer(latency=0.1) as server:  # ~1 s of calls: most signals land while they are in flight
        for trial in range(TRIALS):
            folder = tmp_path / f"t{trial}"
            folder.mkdir()
            calls_before = server.count()
            proc = _accuracy_run(folder, server)
            # One trial in four aims at set-up (the folder exists, no call yet); the others at
            # the calls and the final merge, timed from the first call the server sees, so a
            # slow start on a loaded machine does not turn them into set-up trials.
            setup_trial = trial % 4 == 0
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if (folder / "run" / ".hydra").exists() and (setup_trial or server.count() > calls_before):
                    break
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3) if setup_trial else rng.uniform(0.0, 1.3))
            done, alive = _signal_frozen(proc, folder / "run" / "summary.json", sig)
            _, err = proc.communicate(timeout=120)
            if not (folder / "run").exists() or not run_dirs(folder):
                assert alive and proc.returncode == 130 and "no row had finished" in err
                statuses.append("none")
                continue
            statuses.append(_check(folder / "run", proc.returncode, alive, done, err, sig))
    assert statuses.count("interrupted") >= TRIALS // 3, statuses  # most land while calls are in flight


def test_a_stop_lets_the_calls_in_flight_finish_and_starts_none(tmp_path):
    """'stopping after the work in progress': the calls in flight at Ctrl-C answer and are
    cached (they were cancelled, and the re-run paid for them again), no call starts after
    it, and the run ends interrupted at once after them; the same run again makes exactly
    the calls the first did not."""
    with OpenAIServer(latency=1.5) as server:
        proc = _accuracy_run(tmp_path, server)  # 30 items x 3 repeats, 16 in flight
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.count() < 16:
            time.sleep(0.01)
        time.sleep(0.3)  # the 16 reader calls in flight, none answered yet
        asked = server.count()
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = proc.communicate(timeout=60)
        ended = time.time()
        assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
        # It ends at once after the calls in flight, not after judge calls sent after them (another
        # 1.5 s each), nor a timer: timed from the last reply, since a loaded machine delays both.
        last_reply = max(t for t, _ in server.answered)
        assert ended - last_reply < 2.0 and time.monotonic() - started < 1.5 + 2.5, (ended - last_reply)
        assert server.count() == asked == 16  # nothing sent after the stop
        done = subprocess.run([*memrun_exe(), *_accuracy_run_args(tmp_path, "run2")], cwd=tmp_path,
                              env=_accuracy_env(server), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "from cache 16" in done.stdout + done.stderr  # the 16 readers' replies, paid once
        assert server.count() == 30 * 3 * 2  # every reader and judge call of the run, each made once


def test_a_signal_while_the_table_is_written_finishes_it_then_exits_130(tmp_path, monkeypatch, capsys):
    """The final merge is shielded: signals arriving inside it, even a second one, are
    honoured after it."""
    from memrun.cli import main
    from memrun.io import writer

    real_close = writer.ItemsWriter.close

    def close_with_a_signal(self):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered while the parts are being merged,
        os.kill(os.getpid(), signal.SIGINT)  # and a second one, which elsewhere stops at once
        return real_close(self)

    monkeypatch.setattr(writer.ItemsWriter, "close", close_with_a_signal)
    monkeypatch.chdir(tmp_path)
    assert main(["progress=false", f"hydra.run.dir={tmp_path / 'run'}"]) == 130
    err = capsys.readouterr().err
    # the command named its folder, which holds this run now: the advice is another folder, not the same command
    assert f"interrupted; the rows that finished are in {tmp_path / 'run'}. Run the same command with another " \
        "hydra.run.dir to go on from them (resume=false starts over)\n" in err  # recall: no word of a call cache
    assert pq.read_table(tmp_path / "run" / "items.parquet").num_rows == 30  # every row, merged
