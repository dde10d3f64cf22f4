"""A sweep's headline value says which items it is over: LoCoMo's headline reads
``overall_comparable`` (categories 1-4, 1,536 of its 1,986 questions), so the table's
``items`` must not set 1,986 beside a value over 1,536."""

from __future__ import annotations

import json
from pathlib import Path

from memrun.jobs.sweep import sweep_rows
from memrun.metrics.accuracy import summarize_accuracy
from memrun.report.model import error_count, headline_scope
from memrun.report.sweep_table import render

RECALL = {  # the shape of a LoCoMo bm25 run's summary.json (the figures of the trial's run)
    "status": "complete", "n_items": 1986, "n_errors": 0,
    "overall_comparable": {"n_items": None, "n_scored": 1536, "recall@5": 0.482421875},
    "overall_all": {"n_items": None, "n_scored": 1982, "recall@5": 0.4929364278506559},
    "intervals": {"metric": "recall@5", "overall_all": {"mean": 0.4929, "n_items": 1982},
                  "overall_comparable": {"mean": 0.4824, "n_items": 1536}},
}
ACCURACY = {  # a pilot: 153 items in categories 1-4, 23 of them errored
    "status": "complete", "n_items": 200, "n_errors": 32,
    "headline": {"metric": "accuracy_abstain_wrong", "slice": "overall_comparable", "value": 1 / 130},
    "overall_comparable": {"n_items": 153, "errors": 23, "accuracy_abstain_wrong": 1 / 130},
    "overall_all": {"n_items": 200, "errors": 32, "accuracy_abstain_wrong": 1 / 168},
    "intervals": {"metric": "accuracy_abstain_wrong", "overall_comparable": {"n_items": 130},
                  "overall_all": {"n_items": 168}},
}
EVERY_ITEM = {"status": "complete", "n_items": 30, "n_errors": 0,
              "overall_all": {"n_scored": 30, "recall@5": 0.5}}


def sweep(tmp_path: Path, *summaries: dict) -> Path:
    for i, summary in enumerate(summaries):
        job = tmp_path / f"{i}_job"
        (job / ".hydra").mkdir(parents=True)
        (job / "summary.json").write_text(json.dumps(summary))
    return tmp_path


def test_the_scope_is_the_slice_and_the_items_the_value_averages():
    assert headline_scope(RECALL) == ("overall_comparable", 1536)
    assert headline_scope(ACCURACY) == ("overall_comparable", 130)  # errors are not in the mean
    assert headline_scope(EVERY_ITEM) == ("overall_all", 30)
    assert headline_scope({}) == (None, None)


def test_every_format_of_the_sweep_table_says_what_the_value_is_over(tmp_path):
    rows = sweep_rows(sweep(tmp_path, RECALL, ACCURACY, EVERY_ITEM))
    text = render(rows, "text")
    assert "1536 of 1986" in text and "130 of 200" in text and "value % is over overall_comparable" in text
    assert " 1986 " not in text.replace("1536 of 1986", "")  # the run's count alone never stands beside it
    assert "  30  " in text or " 30 " in text
    data = json.loads(render(rows, "json"))
    assert [(d["headline_slice"], d["headline_items"], d["n_items"]) for d in data] == [
        ("overall_comparable", 1536, 1986), ("overall_comparable", 130, 200), ("overall_all", 30, 30)]
    markdown = render(rows, "markdown")
    assert "1536 of 1986" in markdown and "value % is over overall_comparable" in markdown
    assert "headline_items" in render(rows, "csv").splitlines()[0]


def test_an_accuracy_sweep_counts_the_items_that_errored(tmp_path):
    """An accuracy summary has no ``n_errors`` (its counts are ``overall_all.errors``, items,
    and ``n_row_errors``, rows): the table showed '-' for a job whose items had failed."""
    labels = {"ok": ["correct", "correct"], "one_failed": ["error", "wrong"], "failed": ["error", "error"],
              "failed_too": ["error", "error"]}
    rows = [{"item_id": item, "repeat": r, "label": lab, "category": "1", "retrieved_keys": []}
            for item, item_labels in labels.items() for r, lab in enumerate(item_labels)]
    summary = summarize_accuracy(rows, categories={"1": "one"}, comparable_categories=None,
                                 denominator="accuracy_abstain_wrong", max_error_share=1.0)
    assert "n_errors" not in summary and summary["n_row_errors"] == 5
    assert error_count(summary) == 2  # items whose every repeat errored: left out of the figures
    job = sweep_rows(sweep(tmp_path, {**summary, "status": "complete"}))[0]
    assert job.n_errors == 2 and json.loads(render([job], "json"))[0]["n_errors"] == 2
    assert error_count(RECALL) == 0 and error_count({}) is None
