"""Helpers for the arm tests: compose a run as the command line would, run it in-process."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from rich.console import Console

from memrun.cli import conf_dir
from memrun.config import register
from memrun.run import execute

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def compose_run(overrides: list[str]) -> Any:
    """The config ``memrun <overrides>`` would run."""
    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose("config", overrides=["progress=false", *overrides])


def run_in_process(overrides: list[str], out_dir: Path) -> dict[str, Any]:
    """Compose and execute one run in this process; returns its summary."""
    return execute(compose_run(overrides), out_dir, Console(file=io.StringIO(), width=120))
