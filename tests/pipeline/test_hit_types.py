"""An arm's hits are checked before they reach a row: a field of the wrong type is one
ArmError line naming the arm and the field, on the sequential and the concurrent path
(both call :func:`memrun.pipeline.one_history.check_hits`), never the Parquet writer's
traceback at the run's end."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from memrun.errors import ArmError
from memrun.pipeline.one_history import check_hits
from memrun.records import Hit


class MyArm:
    pass


@pytest.mark.parametrize("hit,needle", [
    (Hit("k", "high"), "whose score is str ('high'); scores are numbers"),  # type: ignore[arg-type]
    (Hit("k", None), "whose score is NoneType"),  # type: ignore[arg-type]
    (Hit("k", Fraction(1, 2)), "whose score is Fraction"),  # type: ignore[arg-type]
    (Hit("k", True), "whose score is bool"),
    (Hit("k", 1.0, None), "whose text is NoneType; texts are str"),  # type: ignore[arg-type]
    (Hit("k", 1.0, b"bytes"), "whose text is bytes"),  # type: ignore[arg-type]
])
def test_a_hit_field_of_the_wrong_type_is_one_line(hit, needle):
    with pytest.raises(ArmError, match="^arm: MyArm.search returned a Hit " + needle.replace("(", r"\(").replace(")", r"\)")):
        check_hits(MyArm(), [Hit("ok", 1.0, "fine"), hit])


def test_numbers_a_row_holds_pass_as_they_are():
    hits = [Hit("a", 1.0, "t"), Hit("b", 2), Hit("c", np.float32(0.5)), Hit("d", np.int64(3)), Hit("e", float("-inf"))]
    assert check_hits(MyArm(), hits) == hits
    assert check_hits(MyArm(), tuple(hits)) == hits
