"""Resuming an unfinished run (memrun/pipeline/resume.py): what is taken over and what is not.

A run stopped midway leaves its rows; the next run of the same configuration keeps them,
except a row whose item failed (run again: a re-run retries failures) and rows made under
another instrument (another endpoint: this run starts over)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from accuracy.helpers import rows, run_memrun
from memrun.core.instrument import METADATA_KEY
from servers.openai_server import OpenAIServer, Reply


def left_unfinished(runs: Path, name: str = "killed") -> Path:
    """The rows of the finished run ``runs/first`` as the only part of a run killed with -9
    (``runs/<name>/items.parts``, no items.parquet): an unfinished run of its configuration.
    (Under ``tmp_path/runs``: a new run looks two folders up, and pytest's ``*current`` link
    beside ``tmp_path`` would show the same folder twice.)"""
    parts = runs / name / "items.parts"
    parts.mkdir(parents=True)
    shutil.copy(runs / "first" / "items.parquet", parts / "part-00000.parquet")
    return runs / name


def resume_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "did not finish" in line or "another instrument" in line]


def test_failed_rows_are_run_again_not_kept(llm_env, tmp_path, capsys):
    llm_env.script(*[Reply.error(400, "bad request simulated")] * 3)  # 3 of the 30 reader calls fail
    rc, first = run_memrun(tmp_path / "runs", "judge=exact", "concurrency=2", name="first")
    assert rc == 0 and sum(r["error"] is not None for r in rows(first)) == 3
    killed = left_unfinished(tmp_path / "runs")
    sent = llm_env.count()
    capsys.readouterr()
    rc, again = run_memrun(tmp_path / "runs", "judge=exact", name="again")
    lines = resume_lines(capsys.readouterr().err)
    assert rc == 0 and len(lines) == 1, lines
    assert str(killed) in lines[0] and "its 27 rows are kept and its 3 failed rows run again" in lines[0]
    assert llm_env.count() - sent == 3  # only the failed items' calls (the others: rows kept)
    final = rows(again)
    assert len(final) == 30 and all(r["error"] is None for r in final)


def test_rows_made_at_another_endpoint_are_not_taken_over(llm_env, tmp_path, capsys, monkeypatch):
    rc, first = run_memrun(tmp_path / "runs", "judge=exact", name="first")
    assert rc == 0
    left_unfinished(tmp_path / "runs")
    with OpenAIServer() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        capsys.readouterr()
        rc, again = run_memrun(tmp_path / "runs", "judge=exact", name="again")
        lines = resume_lines(capsys.readouterr().err)
        assert rc == 0 and len(lines) == 1, lines
        assert f"llm_endpoints.reader: {llm_env.base_url} then, {other.base_url} now" in lines[0]
        assert "starts over" in lines[0]
        assert other.count() == 30  # every item answered where this run points
    assert len(rows(again)) == 30


def test_another_shards_rows_are_not_taken_over(llm_env, tmp_path, capsys):
    runs = tmp_path / "runs"
    rc, first = run_memrun(runs, "judge=exact", "shard.count=2", "shard.index=0", name="first")
    assert rc == 0
    mine = {r["item_id"] for r in rows(first)}
    left_unfinished(runs)
    capsys.readouterr()
    rc, again = run_memrun(runs, "judge=exact", "shard.count=2", "shard.index=1", name="again")
    assert rc == 0 and resume_lines(capsys.readouterr().err) == []
    assert not mine & {r["item_id"] for r in rows(again)}  # shard 1's items only


def _served(out: Path) -> dict[str, str]:
    return json.loads(pq.read_schema(out / "items.parquet").metadata[METADATA_KEY])["served_models"]


def test_the_models_that_answered_the_resumed_rows_stay_on_the_instrument(llm_env, tmp_path, capsys):
    """A resumed run whose rows were all kept makes no call: the models the earlier run's server
    reported still describe its rows. When the failed rows run again against a server that now
    answers as another model, both are recorded and a line says the run mixes them."""
    llm_env.served_model = "served-a"
    rc, first = run_memrun(tmp_path / "runs", "judge=exact", name="first")
    assert rc == 0 and _served(first) == {"reader": "served-a"}
    left_unfinished(tmp_path / "runs")
    rc, again = run_memrun(tmp_path / "runs", "judge=exact", name="again")
    assert rc == 0 and _served(again) == {"reader": "served-a"}, capsys.readouterr().err

    llm_env.script(*[Reply.error(400, "bad request simulated")] * 3)
    rc, failing = run_memrun(tmp_path / "runs2", "judge=exact", "concurrency=2", name="first")
    assert rc == 0 and _served(failing) == {"reader": "served-a"}
    left_unfinished(tmp_path / "runs2")
    llm_env.served_model = "served-b"
    capsys.readouterr()
    rc, mixed = run_memrun(tmp_path / "runs2", "judge=exact", name="again")
    err = capsys.readouterr().err
    assert rc == 0 and _served(mixed) == {"reader": "served-a (resumed rows), served-b"}
    assert "the reader's server answered as served-a in the rows resumed from an earlier run and as served-b" in err
