"""Helpers for accuracy-axis tests: run memrun in-process against the loopback server."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rich.console import Console

from memrun.cli import main
from memrun.config.compose import compose
from memrun.pipeline.run import execute

KEY = "sk-test-loopback-0123456789abcdef"


def run_memrun(tmp_path: Path, *overrides: str, name: str = "run", cache: str = "cache") -> tuple[int, Path]:
    """Run ``memrun axis=accuracy <overrides>`` in-process through the CLI; returns (exit code, run folder)."""
    out = tmp_path / name
    rc = main(["axis=accuracy", "progress=false", f"cache_dir={tmp_path / cache}", f"hydra.run.dir={out}", *overrides])
    return rc, out


def execute_run(tmp_path: Path, *overrides: str, name: str = "run", cache: str = "cache") -> tuple[Path, str]:
    """Compose the config once and call :func:`memrun.pipeline.run.execute` (faster than the CLI,
    which composes twice); returns (run folder, printed text). MemrunErrors propagate."""
    out = tmp_path / name
    cfg = compose(["axis=accuracy", "progress=false", f"cache_dir={tmp_path / cache}", *overrides])
    buffer = io.StringIO()
    execute(cfg, out, Console(file=buffer, width=120))
    return out, buffer.getvalue()


def rows(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / "items.parquet").to_pylist()


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


def field(prompt: str, name: str) -> str | None:
    """The text after ``<name>:`` on its line in a prompt."""
    m = re.search(rf"^{re.escape(name)}:\s*(.*)$", prompt, re.MULTILINE)
    return m.group(1).strip() if m else None


def is_judge(prompt: str) -> bool:
    return '"verdict"' in prompt


def gold_judge(prompt: str) -> str:
    """A deterministic judge: CORRECT when the graded answer contains the gold (case-folded)."""
    gold = (field(prompt, "Gold answer") or "").lower().rstrip(".")
    answer = (field(prompt, "Answer to grade") or "").lower()
    verdict = "CORRECT" if gold and gold in answer else "WRONG"
    return json.dumps({"verdict": verdict, "explanation": f"gold {gold!r} vs {answer!r}"})
