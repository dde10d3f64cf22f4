"""The accuracy summary: majority and tie rules, both denominators, flips, agreement; failure stages."""

from __future__ import annotations

import pytest

from memrun.metrics.accuracy import score_line, summarize_accuracy
from memrun.metrics.failure import failure_stage


def row(item: str, repeat: int, label: str, category: str = "1", keys=("a",), **kw: object) -> dict:
    return {"item_id": item, "repeat": repeat, "label": label, "category": category, "retrieved_keys": list(keys),
            "search_latency_ms": 10.0 * (repeat + 1), **kw}


def summarize(rows, denominator="accuracy_abstain_wrong", comparable=None, max_error_share=0.1):
    return summarize_accuracy(rows, categories={"1": "one", "2": "two"}, comparable_categories=comparable,
                              denominator=denominator, max_error_share=max_error_share)


def test_majority_tie_and_error_rules():
    rows = [
        *[row("correct2of3", r, lab) for r, lab in enumerate(["correct", "wrong", "correct"])],
        *[row("tie", r, lab) for r, lab in enumerate(["correct", "wrong"])],  # tie -> wrong
        *[row("allerror", r, "error") for r in range(3)],  # error only when every repeat errored
        *[row("someerror", r, lab) for r, lab in enumerate(["error", "correct", "error"])],
        *[row("abstains", r, lab) for r, lab in enumerate(["abstain", "abstain", "wrong"])],
    ]
    s = summarize(rows)
    o = s["overall_all"]
    assert (o["correct"], o["wrong"], o["abstained"], o["errors"]) == (2, 1, 1, 1)
    assert o["accuracy"] == pytest.approx(2 / 3)  # correct / (correct + wrong)
    assert o["accuracy_abstain_wrong"] == pytest.approx(2 / 4)  # abstentions count against
    assert s["headline"] == {"metric": "accuracy_abstain_wrong", "slice": "overall_all", "value": 0.5}
    assert summarize(rows, denominator="accuracy")["headline"]["value"] == pytest.approx(2 / 3)
    # flip rate over items with >= 2 non-error repeats: correct2of3, tie, abstains flipped; someerror has one.
    assert o["flip_rate"] == pytest.approx(3 / 3)
    assert s["n_row_errors"] == 5 and s["success_rate"] == pytest.approx(9 / 14)


def test_identical_retrieval_latency_tokens_and_score():
    rows = [
        row("a", 0, "correct", keys=("x", "y"), answer_latency_ms=100.0, context_tokens=1000),
        row("a", 1, "correct", keys=("x", "y"), answer_latency_ms=300.0, context_tokens=None),
        row("b", 0, "wrong", keys=("x",), answer_latency_ms=200.0, context_tokens=3000),
        row("b", 1, "wrong", keys=("z",), answer_latency_ms=200.0, context_tokens=2000),
    ]
    s = summarize(rows)
    assert s["identical_retrieval_share"] == 0.5
    # An item none of whose repeats retrieved anything (an arm that retrieves nothing) has no
    # retrieval to compare: not counted identical (the share was 2 of 3, "identical" by default)
    nothing = [row("c", r, "correct", search_latency_ms=None) for r in (0, 1)]
    for r in nothing:
        r["retrieved_keys"] = None
    assert summarize(rows + nothing)["identical_retrieval_share"] == 0.5
    assert summarize(nothing)["identical_retrieval_share"] is None
    assert s["search_latency_ms"]["p50"] == 10.0  # one search per item (repeat 0)
    assert s["answer_latency_ms"]["p50"] == 200.0
    assert s["context_tokens"] == {"mean": 2000.0, "n_reported": 3}  # None is not a zero
    assert s["score"] == "50.0% / 10ms / 2000tok"
    assert score_line(None, None, None) == "- / - / -"


def test_categories_comparable_slice_and_judge2_agreement():
    rows = [
        row("a", 0, "correct", "1", judge2_label="correct"),
        row("b", 0, "wrong", "1", judge2_label="correct"),
        row("c", 0, "correct", "2", judge2_label="correct"),
        row("d", 0, "wrong", "2", judge2_label="wrong"),
        row("e", 0, "correct", "2", judge2_label="error"),
    ]
    s = summarize(rows, comparable=["1"], max_error_share=0.2)
    assert s["overall_comparable"]["n_items"] == 2 and s["per_category"]["2"]["label"] == "two"
    assert s["headline"]["slice"] == "overall_comparable"
    j2 = s["judge2"]
    assert (j2["n_rows"], j2["n_compared"], j2["n_errors"], j2["n_first_judge_errors"]) == (5, 4, 1, 0)
    assert j2["agreement"] == 0.75 and j2["withheld"] is None  # 1 of 5 left out: at max_error_share, not past it
    # kappa: p_o = 0.75, p_e = (2/4)(3/4) + (2/4)(1/4) = 0.5 -> 0.5
    assert j2["cohen_kappa"] == pytest.approx(0.5)
    # a row the first judge errored is left out too, counted apart; past the share nothing is reported
    j2 = summarize([*rows, row("f", 0, "error", "2", judge2_label="wrong")], max_error_share=0.2)["judge2"]
    assert (j2["n_rows"], j2["n_compared"], j2["n_errors"], j2["n_first_judge_errors"]) == (6, 4, 1, 1)
    assert j2["agreement"] is None and j2["cohen_kappa"] is None
    assert j2["withheld"].startswith("second judge errored on 1 of 6 rows (17%) and the first judge on 1 more, "
                                     "more than max_error_share=0.2 of its rows: agreement not reported")


def test_failure_stage_in_pipeline_order():
    kw = dict(abstention=False, gold="Paris", excerpts=["We met in Paris."], raw=["We met in Paris."])
    assert failure_stage(recalled=False, **kw) == "retrieval_ranking"
    assert failure_stage(recalled=True, **kw) == "reader"
    assert failure_stage(recalled=None, abstention=False, gold="Paris", excerpts=["a city"], raw=["We met in Paris"]) == "compression_loss"
    assert failure_stage(recalled=True, abstention=False, gold="7 May 2023", excerpts=["yesterday"], raw=["yesterday"]) == "not_verbatim"
    assert failure_stage(recalled=False, abstention=True, gold=None, excerpts=[], raw=[]) == "reader"
    assert failure_stage(recalled=True, abstention=False, gold=None, excerpts=["x"], raw=["x"]) is None
    # an arm that retrieves nothing (answers from a file): no stage it did not run is blamed
    assert failure_stage(recalled=None, abstention=False, gold="Paris", excerpts=[], raw=[]) is None
    assert failure_stage(recalled=None, abstention=True, gold=None, excerpts=[], raw=[]) == "reader"
    # hits naming no record of the history (a server's own ids): recall by key and raw records cannot be seen
    kw = dict(abstention=False, gold="Paris", raw=[])
    assert failure_stage(recalled=False, excerpts=["We met in Paris."], **kw) == "reader"
    assert failure_stage(recalled=False, excerpts=["a fact about a city"], **kw) is None
    assert failure_stage(recalled=False, excerpts=[], **kw) == "retrieval_ranking"  # nothing retrieved
