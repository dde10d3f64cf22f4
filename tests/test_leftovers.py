"""A run that did no item leaves nothing behind, and never removes what it did not create;
recall and accuracy runs of one arm land in folders of their own (the axis is in the path)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import memrun_exe, run_dirs, run_memrun

USER_PROJECT = Path(__file__).resolve().parent / "user_project"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_accuracy_run_whose_endpoint_is_down_leaves_no_folder(tmp_path):
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = run_memrun(["axis=accuracy", "judge=exact", "progress=false", "http_attempts=1"], tmp_path, env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("memrun: error: ")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("after_s", [0.3, 0.8, 1.5, 2.5])
def test_sigterm_before_the_first_row_leaves_no_folder(tmp_path, after_s):
    """SIGTERM at points from the imports to the first search: the run either finished
    its first item (kept) or did none (no folder, no empty parent)."""
    from memrun.io.reader import read_run

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(USER_PROJECT), os.environ.get("PYTHONPATH")]))}
    args = ["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword", "+arm.delay_ms=1000", "progress=false"]
    proc = subprocess.Popen([*memrun_exe(), *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(after_s)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode in (130, -signal.SIGTERM), err
    outputs = tmp_path / "outputs"
    folders = run_dirs(outputs)
    assert all(read_run(f).table.num_rows > 0 for f in folders)
    leftover = [p for p in outputs.rglob("*") if p.is_dir() and not any(f == p or f in p.parents for f in folders)
                and not any(p in f.parents for f in folders)]
    assert leftover == [] and (folders or not outputs.exists())


def test_an_early_error_removes_only_the_folders_it_made(tmp_path):
    mine = tmp_path / "outputs" / "mine"
    mine.mkdir(parents=True)
    (tmp_path / "outputs" / "notes.txt").write_text("the user's")
    done = run_memrun(["repeats=0", "progress=false"], tmp_path)  # fails after the folder is made
    assert done.returncode == 2
    assert sorted(p.name for p in (tmp_path / "outputs").iterdir()) == ["mine", "notes.txt"]
    done = run_memrun(["repeats=0", "progress=false", f"hydra.run.dir={mine}"], tmp_path)
    assert done.returncode == 2 and mine.is_dir()  # given by the user: kept, even empty
    deep = tmp_path / "a" / "b" / "c"
    done = run_memrun(["repeats=0", "progress=false", f"hydra.run.dir={deep}"], tmp_path)
    assert done.returncode == 2 and not (tmp_path / "a").exists()


def test_recall_and_accuracy_runs_of_one_arm_have_folders_of_their_own(tmp_path, llm_env):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert run_memrun(["progress=false"], tmp_path, env).returncode == 0
    done = run_memrun(["axis=accuracy", "judge=exact", "progress=false"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    folders = run_dirs(tmp_path / "outputs")
    assert [f.relative_to(tmp_path / "outputs").parts[:3] for f in folders] == [
        ("synthetic", "bm25", "accuracy"), ("synthetic", "bm25", "recall")]
