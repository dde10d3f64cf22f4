"""Fixtures for the arm tests: loopback servers, composed runs, LoCoMo."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from rich.console import Console

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))  # the loopback servers live in tests/servers

from servers import embeddings_server, memory_server  # noqa: E402

from memrun.cli import conf_dir  # noqa: E402
from memrun.config import register  # noqa: E402
from memrun.run import execute  # noqa: E402


@pytest.fixture
def memory() -> Iterator[tuple[memory_server.MemoryState, str]]:
    """A reference memory server on a free loopback port: (its state, its base URL)."""
    state = memory_server.MemoryState()
    server = memory_server.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def embeddings() -> Iterator[tuple[embeddings_server.EmbeddingsState, str]]:
    """An OpenAI-compatible embeddings endpoint on loopback: (its state, base URL ending /v1)."""
    state = embeddings_server.EmbeddingsState()
    server = embeddings_server.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def compose_run(overrides: list[str]) -> Any:
    """The config ``memrun <overrides>`` would run."""
    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose("config", overrides=["progress=false", *overrides])


def run_memrun(overrides: list[str], out_dir: Path) -> dict[str, Any]:
    """Compose and execute one run in-process; returns its summary."""
    return execute(compose_run(overrides), out_dir, Console(file=io.StringIO(), width=120))


@pytest.fixture(scope="session")
def locomo_dir() -> Path:
    """MEMRUN_DATA_DIR holding locomo10.json (realdata tests skip without it)."""
    folder = os.environ.get("MEMRUN_DATA_DIR")
    if not folder or not (Path(folder) / "locomo10.json").is_file():
        pytest.skip("MEMRUN_DATA_DIR with locomo10.json is not set")
    return Path(folder)


@pytest.fixture(scope="session")
def locomo(locomo_dir: Path) -> Any:
    """The loaded LoCoMo dataset (conf/benchmark/locomo.yaml)."""
    from hydra.utils import instantiate

    cfg = compose_run(["benchmark=locomo"])
    params = {k: v for k, v in cfg.benchmark.items() if k != "name"}
    return instantiate(params, _convert_="all").load(locomo_dir)
