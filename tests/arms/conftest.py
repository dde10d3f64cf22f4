"""Fixtures for the arm tests: the reference memory server (tests/servers/) and LoCoMo.

The OpenAI-compatible endpoint (chat and embeddings) is tests/conftest.py's ``openai_server``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import memory_server  # tests/servers: the loopback servers

from arms.support import compose_run
from memrun.config import BENCHMARK_RESERVED_KEYS
from memrun.plugins import build


@pytest.fixture
def memory() -> Iterator[tuple[memory_server.MemoryState, str]]:
    """A reference memory server on a free loopback port: (its state, its base URL)."""
    state = memory_server.MemoryState()
    server = memory_server.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def locomo(data_dir: Path) -> Any:
    """LoCoMo as conf/benchmark/locomo.yaml loads it (``data_dir``: tests/conftest.py)."""
    benchmark = build(compose_run(["benchmark=locomo"]).benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    return benchmark.load(data_dir)
