"""Terminal output: the retrieval table at 80 columns, plain progress lines off a terminal,
and one summary model behind the tables, the sweep and the report."""

from __future__ import annotations

import io
import json
import time

from rich.console import Console

from memrun.pipeline.progress_lines import PlainProgress
from memrun.report import model
from memrun.report.run_summary import retrieval_table


def _printed(summary, ks, width=80) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(retrieval_table(summary, ks, "t"))
    return buf.getvalue()


def test_the_retrieval_table_fits_80_columns_unabridged(recall_dir):
    summary = json.loads((recall_dir / "summary.json").read_text())
    text = _printed(summary, [1, 3, 5, 10])
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    assert "recall" in text and "all@10" in text and "overall_all" in text
    six = {**summary, "overall_all": {**summary["overall_all"], "recall@30": 0.5, "recall@50": 0.5}}
    text = _printed(six, [1, 3, 5, 10, 30, 50])
    assert "…" not in text and "R@K: recall@K" in text


def test_plain_progress_lines_on_a_timer():
    out = io.StringIO()
    with PlainProgress(seconds=0.05, stream=out) as progress:
        task = progress.add_task("locomo x bm25", total=10, errors=0)
        progress.update(task, advance=4, errors=1)
        deadline = time.monotonic() + 30  # a line after the update: 0.05 s, later on a loaded machine
        while "4/10" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("progress: locomo x bm25: 4/10 items (40%), 1 errors, ") and line.endswith(" s")


def test_one_model_behind_tables_sweep_and_report(recall_dir):
    from memrun.jobs import sweep

    summary = json.loads((recall_dir / "summary.json").read_text())
    assert sweep.report_model.headline is model.headline  # the sweep table names its headline from the model
    names = [s.name for s in model.slices(summary)]
    assert names[0] == "overall_all" and len(names) == 1 + len(summary["per_category"])
    bars = model.interval_bars(summary)
    assert [b["name"] for b in bars] == names
    assert bars[0]["value"] == summary["overall_all"]["recall@5"] and bars[0]["low"] is not None
