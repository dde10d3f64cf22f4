"""Shared fixtures: real-data location, running the ``memrun`` console script, and
loopback servers the tests start themselves (never a real API)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrun.core import signals
from servers import memory_server
from servers.openai_server import OpenAIServer

LOCOMO_FILE = "locomo10.json"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``MEMRUN_DATA_DIR`` holding locomo10.json; skips when absent, fails under MEMRUN_REQUIRE_DATA=1."""
    env = os.environ.get("MEMRUN_DATA_DIR")
    if not env or not (Path(env) / LOCOMO_FILE).is_file():
        message = f"realdata: set MEMRUN_DATA_DIR to a folder holding {LOCOMO_FILE} (now {env!r})"
        if os.environ.get("MEMRUN_REQUIRE_DATA"):  # CI: a skipped real-data test is a failure
            pytest.fail(message)
        pytest.skip(message)
    return Path(env).resolve()


@pytest.fixture(scope="session")
def beam_dir() -> Path:
    """``MEMRUN_DATA_DIR`` holding BEAM's 100K and 500K chats under ``beam/chats/``; skips when
    absent, fails under MEMRUN_REQUIRE_DATA=1."""
    env = os.environ.get("MEMRUN_DATA_DIR")
    if not env or not (Path(env) / "beam" / "chats" / "500K" / "1" / "chat.json").is_file():
        message = f"realdata: set MEMRUN_DATA_DIR to a folder holding beam/chats/ (now {env!r})"
        if os.environ.get("MEMRUN_REQUIRE_DATA"):
            pytest.fail(message)
        pytest.skip(message)
    return Path(env).resolve()


def memrun_exe() -> list[str]:
    """The installed console script, else ``python -m memrun``."""
    exe = shutil.which("memrun", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "memrun"]


def run_memrun(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``memrun ARGS`` in ``cwd`` and capture its output (never raises on exit code).
    ``timeout`` only guards a hang: a loaded 2-core CI machine can take minutes over a LoCoMo run."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [*memrun_exe(), *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def run_after_a_killed_one(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A finished run in ``runs/done``, its rows copied as the only part of a run killed with
    -9 (``runs/killed/items.parts``, no items.parquet), then the same configuration again in
    ``runs/again``: that last run's process (asserted to have exited 0)."""
    first = run_memrun(["progress=false", f"hydra.run.dir={tmp_path / 'runs' / 'done'}"], tmp_path)
    assert first.returncode == 0, first.stderr
    killed = tmp_path / "runs" / "killed" / "items.parts"
    killed.mkdir(parents=True)
    shutil.copy(tmp_path / "runs" / "done" / "items.parquet", killed / "part-00000.parquet")
    again = run_memrun(["progress=false", f"hydra.run.dir={tmp_path / 'runs' / 'again'}"], tmp_path)
    assert again.returncode == 0, again.stderr
    return again


def run_dirs(root: Path) -> list[Path]:
    """Run folders (those holding items.parquet or items.parts) under ``root``."""
    return sorted({p.parent for p in root.rglob("items.parquet")} | {p.parent for p in root.rglob("items.parts")})


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible chat server (tests/servers/openai_server.py), fresh per test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def memory() -> Iterator[tuple[memory_server.MemoryState, str]]:
    """A reference memory server on a free loopback port: (its state, its base URL)."""
    state = memory_server.MemoryState()
    server = memory_server.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def llm_env(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path) -> OpenAIServer:
    """Point OPENAI_BASE_URL / OPENAI_API_KEY at the loopback server; returns the server."""
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789abcdef")
    return openai_server


@pytest.fixture(autouse=True)
def _no_stop_left_asked_for() -> Iterator[None]:
    """A test that signals its own process (tests/core/test_signals.py) leaves the stop it asked
    for recorded; a later in-process run that does not go through the CLI's install (such
    as tests/arms/support.run_in_process) would honour it and end interrupted. Installing
    and at once restoring the handlers clears it and leaves the handlers as they were."""
    yield
    signals.install()()
