"""The memrun command sets numpy's and pyarrow's native settings before they load."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from memrun import cli
from memrun.core import native_env

# Runs the memrun console entry (what `memrun ...` and `python -m memrun ...` call) on a small
# retrieval run, and records the environment each of numpy and pyarrow saw when first imported.
SPY = """
import json, os, sys
seen = {}
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ('numpy', 'pyarrow') and name not in seen:
            seen[name] = {k: os.environ.get(k) for k in %r}
sys.meta_path.insert(0, Spy())
sys.argv = ['memrun', 'benchmark=synthetic', 'arm=bm25', 'progress=false']
from memrun.cli import console
rc = console()
print(json.dumps(seen))
sys.exit(rc)
""" % (list(native_env.SETTINGS),)


def _seen(tmp_path, **env):
    base = {k: v for k, v in os.environ.items() if k not in native_env.SETTINGS}
    done = subprocess.run([sys.executable, "-c", SPY], cwd=tmp_path, capture_output=True, text=True,
                          env={**base, "MEMRUN_DATA_DIR": str(tmp_path / "empty"), **env}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_command_sets_them_before_numpy_and_pyarrow_load(tmp_path):
    seen = _seen(tmp_path)
    assert set(seen) == {"numpy", "pyarrow"}  # the run loaded both
    for library in seen.values():
        assert library == native_env.SETTINGS


def test_a_users_own_value_is_kept(tmp_path):
    seen = _seen(tmp_path, OPENBLAS_THREAD_TIMEOUT="12", MIMALLOC_ALLOW_THP="")
    for library in seen.values():
        assert library == {"OPENBLAS_THREAD_TIMEOUT": "12", "MIMALLOC_ALLOW_THP": ""}


def test_settle_adds_only_what_is_missing():
    environ = {"MIMALLOC_ALLOW_THP": "1", "PATH": "/bin"}
    assert native_env.settle(environ) == {"OPENBLAS_THREAD_TIMEOUT": "4"}
    assert environ == {"MIMALLOC_ALLOW_THP": "1", "PATH": "/bin", "OPENBLAS_THREAD_TIMEOUT": "4"}
    assert native_env.settle(environ) == {}


def test_main_as_a_library_call_leaves_the_environment_alone(monkeypatch, tmp_path):
    for name in native_env.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(tmp_path / "empty"))
    assert cli.main(["benchmark=synthetic", "arm=bm25", "progress=false"]) == 0
    assert not any(name in os.environ for name in native_env.SETTINGS)
