"""Fixtures for the arm tests: LoCoMo as loaded by its config.

The reference memory server (``memory``) and the OpenAI-compatible endpoint
(``openai_server``) are tests/conftest.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arms.support import compose_run
from memrun.config import BENCHMARK_RESERVED_KEYS
from memrun.core.plugins import build


@pytest.fixture(scope="session")
def locomo(data_dir: Path) -> Any:
    """LoCoMo as conf/benchmark/locomo.yaml loads it (``data_dir``: tests/conftest.py)."""
    benchmark = build(compose_run(["benchmark=locomo"]).benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    return benchmark.load(data_dir)
