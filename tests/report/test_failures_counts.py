"""``memrun failures`` never prints '0 of 0 shown' alone: the items it does not list are
counted beside (an accuracy run's correct, abstained and errored items, as a recall run's hits,
errors and unscored items), and a run that did not finish says so."""

from __future__ import annotations

import json

import pytest

from memrun.cli import main
from run_tables import accuracy_run


def test_an_accuracy_run_with_no_wrong_item_says_what_its_items_were(tmp_path, capsys):
    run = accuracy_run(tmp_path / "run", {
        "i1": ["correct", "correct", "wrong"], "i2": ["correct"] * 3, "i3": ["abstain", "abstain", "wrong"],
        "i4": ["error"] * 3, "i5": ["wrong", "wrong", "correct"]})
    assert main(["failures", str(run)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 of 1 failed items shown | not failures: 2 correct, 1 abstained (--abstain lists them), " \
           "1 errored (excluded)" in out
    assert main(["failures", str(run), "--abstain", "--format", "md"]) == 0
    assert "2 of 2 failed items shown | not failures: 2 correct, 1 errored (excluded)" in capsys.readouterr().out


@pytest.mark.parametrize("status", ["interrupted", "failed"])  # failed: stopped after its first calls all failed
def test_a_run_that_stopped_early_says_it_did_not_finish(tmp_path, capsys, status):
    run = accuracy_run(tmp_path / "run", {"i1": ["correct"] * 3}, status=status)
    assert main(["failures", str(run)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"did not finish (status {status}); showing the rows that did" in out and "0 of 0 failed items shown | not failures: 1 correct" in out


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_a_failed_run_prints_its_error_beside_saying_it_did_not_finish(tmp_path, capsys, fmt):
    """The instrument's ``error`` says why the run stopped: every format prints it (json on
    stderr, as its stdout holds one item a line)."""
    error = "every item failed (3 rows, kept in the run folder); the first error: HTTP 401 bad key"
    run = accuracy_run(tmp_path / "run", {"i1": ["wrong"] * 3}, status="failed", error=error)
    assert main(["failures", str(run), "--format", fmt]) == 0
    out, err = capsys.readouterr()
    said = " ".join((err if fmt == "json" else out).split())
    assert "did not finish (status failed: every item failed (3 rows, kept in the run folder); the first error: " \
           "HTTP 401 bad key)" in said
    if fmt == "json":
        assert [json.loads(line)["item_id"] for line in out.splitlines()] == ["i1"]
