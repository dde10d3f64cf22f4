"""The arm contract (memrun.arms.contract): a user's arm is held to every declared hook when
it is built, and a broken hook is one line naming it and how it must be written."""

from __future__ import annotations

import pytest

from arms import contract_arms
from arms.support import run_in_process
from memrun.arms.contract import ARM_HOOKS, ArmHooks, arm_hooks, check_arm
from memrun.errors import ArmError

ARM = ["benchmark=synthetic", "arm=bm25"]


@pytest.mark.parametrize("cls, message", [
    ("MisspelledHook", r"^arm: arms.contract_arms.MisspelledHook.prepare_query is no hook memrun calls: "
                       r"did you mean prepare_queries\(self, queries\)\?"),
    ("ExtraArgument", r"^arm: arms.contract_arms.ExtraArgument.describe\(self, verbose\) "
                      r"cannot be called as describe\(self\)"),
    ("NotAMethod", r"^arm: arms.contract_arms.NotAMethod.unknown_ids is list, not a method: "
                   r"unknown_ids\(self, item_ids\)"),
    ("ThreadSafeText", r"^arm: arms.contract_arms.ThreadSafeText.thread_safe is str 'yes'; "
                       r"it must be thread_safe: bool"),
    ("AsyncAnswer", r"^arm: arms.contract_arms.AsyncAnswer.answer_for is async def, but memrun calls it "
                    r"without awaiting"),
    ("AsyncPrepare", r"^arm: arms.contract_arms.AsyncPrepare.prepare_queries is async def but the arm's "
                     r"ingest/search are not"),
])
def test_a_broken_hook_is_refused_at_build_in_one_line(tmp_path, cls, message) -> None:
    with pytest.raises(ArmError, match=message) as info:
        run_in_process([*ARM, f"arm._target_=arms.contract_arms.{cls}"], tmp_path / "run")
    assert "\n" not in str(info.value)
    assert "memrun.arms.contract" in str(info.value)  # where the contract is written down
    assert not (tmp_path / "run" / "items.parquet").exists()  # refused before any work


def test_an_arm_keeping_the_contract_runs_with_its_optional_hooks_called(tmp_path) -> None:
    contract_arms.Good.prepared.clear()
    summary = run_in_process([*ARM, "arm._target_=arms.contract_arms.Good"], tmp_path / "run")
    plain = run_in_process(ARM, tmp_path / "plain")
    assert contract_arms.Good.prepared  # prepare_queries reached through the contract
    assert summary["overall_all"] == plain["overall_all"] and summary["per_category"] == plain["per_category"]


def test_the_hooks_are_bound_from_the_declaration() -> None:
    arm = contract_arms.Good(k1=1.5, b=0.75)
    hooks = check_arm(arm)
    assert isinstance(hooks, ArmHooks) and hooks.kind == "sequential" and not hooks.concurrent
    assert hooks.prepare_queries == arm.prepare_queries and hooks.search_item is None
    assert hooks.answer_for is None and hooks.release is None
    # every optional hook the run may call has a field of ArmHooks (the thread_safe flag is its kind)
    optional = {h.name for h in ARM_HOOKS if not h.required} - {"thread_safe"}
    assert optional == set(ArmHooks.__dataclass_fields__) - {"kind"}
    assert arm_hooks(object()).describe is None


def test_a_required_hook_missing_names_it(tmp_path) -> None:
    with pytest.raises(ArmError, match=r"^arm: builtins.object has no ingest\(\) method: "
                                       r"ingest\(self, history_id, records\)"):
        check_arm(object(), "builtins.object")
