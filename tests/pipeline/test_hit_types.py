"""An arm's hits are checked before they reach a row: a field of the wrong type is one
ArmError line naming the arm and the field, on the sequential and the concurrent path
(both call :func:`memrun.pipeline.one_history.check_hits`), never the Parquet writer's
traceback at the run's end."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from arms.support import run_in_process
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


@pytest.mark.parametrize("arm", ["KeysOnlyArm", None])
def test_hits_without_text_under_phrase_gold_are_counted_and_warned(tmp_path, arm) -> None:
    """benchmark=synthetic matches gold phrases in a hit's key or text: an arm returning
    Hit(key, score) scored 0 on every item and the run said nothing."""
    overrides = ["benchmark=synthetic", "arm=bm25", "progress=false", *([f"arm._target_=arms.faulty.{arm}"] if arm else [])]
    summary = run_in_process(overrides, tmp_path / "run")
    n_hits = summary["arm_checks"]["n_hits"]
    said = [w for w in summary["warnings"] if "carry no text" in w]
    if arm:
        assert summary["arm_checks"]["textless_hits"] == n_hits > 0 and summary["overall_all"]["recall@10"] == 0
        assert said == [f"{n_hits} of {n_hits} hits (100.0%) carry no text while gold is a phrase a hit must contain "
                        "(gold_match=substring): such a hit matches gold only by its key, so it counts as a miss "
                        "whatever it found; return each hit with its record's text (Hit(record.key, score, record.text))"]
    else:  # bm25's hits carry their records' text
        assert summary["arm_checks"]["textless_hits"] == 0 and said == []


@pytest.mark.parametrize("arm,method", [("ExitingArm", "search"), ("ExitingIngestArm", "ingest")])
def test_an_arm_that_calls_sys_exit_stops_the_run_in_one_line(tmp_path, monkeypatch, capsys, arm, method):
    """An arm method calling sys.exit(3) ended memrun with exit 3 and no word (SystemExit passes
    every ``except Exception``); it is an ArmError naming the arm and the method."""
    from memrun.cli import main

    monkeypatch.chdir(tmp_path)
    code = main(["benchmark=synthetic", "arm=bm25", f"arm._target_=arms.faulty.{arm}", "progress=false",
                 f"hydra.run.dir={tmp_path / 'run'}"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"memrun: error: arm: {arm}.{method} called sys.exit(3): an arm must raise an exception for a failed call "
        "(recorded on its items), not end the process")
