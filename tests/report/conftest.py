"""Fixtures of the report tests: small real runs made in-process (retrieval and accuracy)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from accuracy.helpers import execute_run, field, gold_judge, is_judge
from memrun.benchmarks.synthetic import Synthetic
from memrun.cli import main
from report.browser import browser  # noqa: F401 - a fixture
from report.view_helpers import screenshot_dir, serving
from servers.openai_server import prompt_text

GOLD = {item.question: item.answer for item in Synthetic().load(Path(".")).items()}


def mixed_reader(body: dict) -> str:
    """Judge prompts: a gold-based verdict; reader prompts: the gold for two questions in three."""
    text = prompt_text(body)
    if is_judge(text):
        return gold_judge(text)
    question = field(text, "Question") or ""
    return str(GOLD.get(question, "no idea")) if len(question) % 3 else "I do not know"


def recall_run(folder: Path, *overrides: str) -> Path:
    """A synthetic retrieval run written to ``folder``."""
    assert main(["progress=false", f"hydra.run.dir={folder}", *overrides]) == 0
    return folder


@pytest.fixture
def recall_dir(tmp_path: Path) -> Path:
    return recall_run(tmp_path / "recall")


@pytest.fixture
def accuracy_dir(llm_env, tmp_path: Path) -> Path:
    llm_env.responder = mixed_reader
    # In a thread: the browser fixture's Playwright holds an event loop on this one.
    with ThreadPoolExecutor(1) as pool:
        out, _ = pool.submit(execute_run, tmp_path, "judge=gpt41", name="acc").result()
    return out


@pytest.fixture(scope="module")
def app(outputs) -> str:
    """``memrun view`` serving the module's own ``outputs`` fixture (a folder of runs): its URL."""
    with serving(outputs) as url:
        yield url


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """The module's screenshot folder (CI's artifacts when MEMRUN_SCREENSHOTS is set)."""
    return screenshot_dir(tmp_path_factory.mktemp("shots"))
