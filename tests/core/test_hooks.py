"""Declared hooks (memrun.core.hooks) for judges and benchmarks: a user's plugin is held to
its contract when it is built, one line naming the hook. The arm contract: tests/arms/test_contract.py."""

from __future__ import annotations

import asyncio

import pytest
from omegaconf import OmegaConf

from memrun.benchmarks import check_benchmark
from memrun.core.hooks import VALUE, Hook, bind, check
from memrun.errors import ConfigError
from memrun.judges import Case, JudgeVerdict, build_judge, judge_hooks
from memrun.judges.lexical import ExactJudge
from memrun.records import Item

CASE = Case(Item("q0", "h0", "h0", "c", "what?", "a", '"a"', ()), "c", "a", "a")


def judge(cls: str):
    return build_judge(OmegaConf.create({"_target_": f"core.hook_plugins.{cls}"}), "judge2", None)


def test_a_judge_keeping_its_contract_is_read_through_its_hooks() -> None:
    hooks = judge_hooks(judge("Judge"))
    assert hooks.abstention_categories == ("adversarial",) and hooks.fractional is False
    assert hooks.plan_note is None and hooks.request is None and hooks.requests is None
    exact = judge_hooks(ExactJudge(abstention_categories=["adversarial"]))  # a built-in, its defaults
    assert exact.abstention_categories == ("adversarial",) and exact.endpoint is None and not exact.fractional


@pytest.mark.parametrize("cls, message", [
    ("FractionalText", r"^judge2: core.hook_plugins.FractionalText.fractional is str 'yes'; it must be fractional: bool"),
    ("AbstentionCategory", r"^judge2: core.hook_plugins.AbstentionCategory.abstention_category is no hook memrun "
                           r"calls: did you mean abstention_categories: tuple \| list\?"),
    ("SyncGrade", r"^judge2: core.hook_plugins.SyncGrade.grade must be async def"),
])
def test_a_broken_judge_hook_is_one_line_at_build(cls, message) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        judge(cls)
    assert "\n" not in str(info.value) and "memrun.judges" in str(info.value)


def test_a_benchmark_is_held_to_load_data_dir() -> None:
    from core.hook_plugins import LoadNoDir, Loads

    assert check_benchmark(Loads()) is not None
    with pytest.raises(ConfigError, match=r"^benchmark: my.Bench.load\(self\) cannot be called as "
                                          r"load\(self, data_dir\)"):
        check_benchmark(LoadNoDir(), "my.Bench")
    with pytest.raises(ConfigError, match=r"^benchmark: my.Bench has no load\(\) method"):
        check_benchmark(object(), "my.Bench")


def test_bind_gives_the_declared_hooks_only() -> None:
    class Plugin:
        flag = True
        other = 1

        def hook(self, x: int) -> int:
            return x

    hooks = (Hook("hook", ("x",)), Hook("flag", kind=VALUE, types=(bool,)), Hook("absent"))
    bound = bind(Plugin(), hooks)
    assert set(bound) == {"hook", "flag", "absent"} and bound["hook"](2) == 2 and bound["flag"] is True
    assert bound["absent"] is None
    check(Plugin(), hooks, "x", "here", ValueError)  # keeps the contract: no error


@pytest.mark.parametrize("verdict, message", [
    ("correct", r"Verdicts.grade returned str 'correct'; it must return a memrun.judges.JudgeVerdict"),  # AttributeError
    (JudgeVerdict("yes", 1.0, ""), r"Verdicts.grade returned the label 'yes'; labels are correct, wrong"),  # ValueError
    (JudgeVerdict("correct", "1", ""), r"Verdicts.grade returned a score of type str \('1'\)"),  # ArrowInvalid
    (JudgeVerdict("correct", 1.0, 5), r"Verdicts.grade returned an explanation of type int"),
])
def test_a_user_judge_s_verdict_of_the_wrong_shape_is_one_line(verdict, message, monkeypatch) -> None:
    from core import hook_plugins

    monkeypatch.setattr(hook_plugins.Verdicts, "verdict", verdict)
    with pytest.raises(ConfigError, match=r"^judge: core.hook_plugins." + message) as info:
        asyncio.run(judge("Verdicts").grade(CASE, 0))
    assert "\n" not in str(info.value)


def test_a_user_judge_raising_fails_the_item_and_a_good_one_is_read_as_it_is(monkeypatch) -> None:
    from core import hook_plugins

    monkeypatch.setattr(hook_plugins.Verdicts, "verdict", RuntimeError("judge boom"))
    failed = asyncio.run(judge("Verdicts").grade(CASE, 0))  # was a traceback ending the run
    assert (failed.label, failed.score) == ("error", None)
    assert failed.explanation == "core.hook_plugins.Verdicts.grade raised RuntimeError: judge boom"
    assert asyncio.run(judge("Judge").grade(CASE, 0)) == JudgeVerdict("correct", 1.0, "")
    assert judge("Judge").describe()["judge_model"] == "user"
    assert type(build_judge(OmegaConf.create({"_target_": "memrun.judges.lexical.ExactJudge"}), "judge", None)) \
        is ExactJudge  # memrun's own judges are not wrapped

