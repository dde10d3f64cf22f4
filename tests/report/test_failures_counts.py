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
    assert f"ended {status}; showing the rows it wrote" in out and "0 of 0 failed items shown | not failures: 1 correct" in out


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_a_failed_run_prints_its_error_beside_saying_it_did_not_finish(tmp_path, capsys, fmt):
    """The instrument's ``error`` says why the run stopped: every format prints it (json on
    stderr, as its stdout holds one item a line)."""
    error = "every item failed (3 rows, kept in the run folder); the first error: HTTP 401 bad key"
    run = accuracy_run(tmp_path / "run", {"i1": ["wrong"] * 3}, status="failed", error=error)
    assert main(["failures", str(run), "--format", fmt]) == 0
    out, err = capsys.readouterr()
    said = " ".join((err if fmt == "json" else out).split())
    assert f"ended failed and recorded the error: {error}" in said
    if fmt == "json":
        assert [json.loads(line)["item_id"] for line in out.splitlines()] == ["i1"]


def test_a_partial_merge_or_one_shard_says_it_is_not_the_whole_run(tmp_path, capsys):
    """A merge missing a shard (status partial) and a shard alone listed their misses as a
    whole run's: failures read 'not whole' as running, interrupted or stopped only, while
    compare warned on them (RunTable.unfinished is now the one reading)."""
    partial = accuracy_run(tmp_path / "partial", {"i1": ["wrong"]}, status="partial",
                           shard={"count": 3, "missing": [2], "merged": [0, 1]})
    assert main(["failures", str(partial)]) == 0
    assert "ended partial (shards 2 missing); showing the rows it wrote" in " ".join(capsys.readouterr().out.split())
    assert main(["failures", str(partial), "--json"]) == 0  # stdout: one item a line; the rest on stderr
    captured = capsys.readouterr()
    assert [json.loads(line)["item_id"] for line in captured.out.splitlines()] == ["i1"]
    assert "ended partial (shards 2 missing)" in captured.err
    assert "1 of 1 failed items written | not failures: 0 correct, 0 abstained" in captured.err
    shard = accuracy_run(tmp_path / "shard", {"i1": ["wrong"]}, shard={"count": 3, "index": 0})
    assert main(["failures", str(shard), "--format", "md"]) == 0
    assert "**This run is shard 0 of 3 of a run, not the whole run" in capsys.readouterr().out
    whole = accuracy_run(tmp_path / "whole", {"i1": ["wrong"]}, status="degraded")
    assert main(["failures", str(whole)]) == 0
    assert "showing the rows it wrote" not in capsys.readouterr().out


def test_a_table_holding_an_item_repeat_twice_is_refused(tmp_path, capsys):
    """A hand-joined table with ('i1', 0) twice listed i1 with labels wrong, wrong (two repeats)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = accuracy_run(tmp_path / "run", {"i1": ["wrong"], "i2": ["correct"]})
    table = pq.read_table(run / "items.parquet")
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]).replace_schema_metadata(table.schema.metadata),
                   run / "items.parquet")
    assert main(["failures", str(run)]) == 2
    assert "1 (item_id, repeat) pair(s) occur on more than one row, first ('i1', 0)" in capsys.readouterr().err
