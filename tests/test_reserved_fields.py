"""Issue 31, point 6: the instrument fields an arm may and may not report are derived from
:class:`Instrument`'s own declaration, once, so a new comparability field is reserved by default."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from memrun.arms import describe
from memrun.arms.http import health_fields
from memrun.core.instrument import Instrument
from memrun.errors import ArmError


class Claims:
    """An arm whose describe() reports what it is given."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def describe(self) -> dict[str, Any]:
        return self.fields


@pytest.mark.parametrize("name", ["repeats", "granularity", "majority_rule", "retrieval_preset"])
def test_an_arm_cannot_claim_a_comparability_field_the_hand_lists_forgot(name: str) -> None:
    with pytest.raises(ArmError, match=f"reports {name}, which the run sets itself"):
        describe(Claims({name: 3}))


def test_every_field_the_run_sets_is_reserved_and_the_arm_fields_pass() -> None:
    names = {f.name for f in dataclasses.fields(Instrument)}
    arm = set(Instrument.arm_fields())
    assert arm and arm < names and Instrument.reserved_fields() == names - arm
    for name in sorted(Instrument.comparability_fields()):
        if name in arm:
            assert describe(Claims({name: "x"})) == {name: "x"}
        else:
            with pytest.raises(ArmError):
                describe(Claims({name: "x"}))
    assert describe(Claims({"truncation": "none"})) == {"truncation": "none"}  # the arm's own keys: provenance


def test_a_health_response_reports_only_server_fields() -> None:
    assert health_fields({"embedder": "e5", "providers": ["fake-llm"]}) == ({"embedder": "e5", "providers": ["fake-llm"]}, ["fake-llm"])
    for name in ("repeats", "crediting", "judge_model"):
        with pytest.raises(ArmError, match="keys among"):
            health_fields({name: 1})
