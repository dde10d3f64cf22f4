"""Helpers for the arm tests: compose a run as the command line would, run it in-process."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from rich.console import Console

from memrun.cli import conf_dir
from memrun.config import register
from memrun.pipeline.run import execute

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


class Blocking:
    """An async arm (arm=http) driven one call at a time, as memrun's retrieval flow drives it
    at ``arm.concurrency=1``: each ``ingest`` first releases the previous history, and
    ``search`` searches the last history ingested. Other attributes are the arm's."""

    def __init__(self, arm: Any) -> None:
        self.arm, self.current = arm, None
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.arm, name)

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def ingest(self, history_id: str, records: Any) -> None:
        if self.current is not None:
            self._run(self.arm.release(self.current))
        self.current = history_id
        self._run(self.arm.ingest(history_id, records))

    def search(self, query: str, k: int) -> Any:
        return self._run(self.arm.search(query, k, history_id=self.current))

    def close(self) -> None:
        if not self.loop.is_closed():
            try:
                self._run(self.arm.disconnect())
            finally:
                self.loop.close()
        self.arm.close()
