"""User judges and benchmarks that keep or break their contracts (tests only), named by
``_target_=core.hook_plugins.<Class>``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrun.judges import Case, JudgeVerdict


class Plain:
    """A judge with the required hooks only."""

    def __init__(self, llm: Any = None, where: str = "judge") -> None:
        self.llm = llm

    def describe(self) -> dict[str, Any]:
        return {"judge_model": "user", "judge_prompt_sha256": None, "fake": False, "endpoint": None}

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        return JudgeVerdict("correct" if case.answer == case.gold else "wrong", 1.0, "")


class Judge(Plain):
    """A judge keeping the contract, with the optional values set."""

    abstention_categories = ("adversarial",)
    fractional = False
    plan_note = None


class Verdicts(Plain):
    """A judge whose grade returns ``self.verdict`` (or raises it), to test the checks on what it returns."""

    verdict: Any = None

    async def grade(self, case: Case, repeat: int) -> Any:
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


class FractionalText(Judge):
    """``fractional = "yes"``: the run reads ``fractional is True``."""

    fractional = "yes"  # type: ignore[assignment]


class AbstentionCategory(Plain):
    """``abstention_category`` for ``abstention_categories``: never read."""

    abstention_category = ("adversarial",)


class SyncGrade(Judge):
    """``grade`` as a plain def: memrun awaits it."""

    def grade(self, case: Case, repeat: int) -> JudgeVerdict:  # type: ignore[override]
        return JudgeVerdict("correct", 1.0, "")


class LoadNoDir:
    """A benchmark whose ``load`` takes no folder."""

    def load(self) -> Any:
        return None


class Loads:
    """A benchmark with its one hook."""

    def load(self, data_dir: Path) -> Any:
        return None
