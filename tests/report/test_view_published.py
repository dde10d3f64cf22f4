"""``memrun view`` in a real headless Chromium: a LoCoMo run's page and a compare page set
the runs beside the gallery's published numbers for the benchmark, cited, naming the
entry's settings each run was not made with."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from memrun.cli import main
from memrun.gallery.entries import load_entries
from report.view_helpers import check_fits, open_url


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, data_dir) -> Path:
    """Two retrieval runs on LoCoMo's first 60 questions: bm25 (memrun's default setting) and
    okapi over text-only records (memory-core-eval's setting but for the id list)."""
    root = tmp_path_factory.mktemp("outputs")
    common = ["benchmark=locomo", "benchmark.limit=60", "progress=false"]
    import os
    saved = os.environ.get("MEMRUN_DATA_DIR")
    os.environ["MEMRUN_DATA_DIR"] = str(data_dir)
    try:
        assert main([*common, "arm=bm25", f"hydra.run.dir={root / 'bm25'}"]) == 0
        assert main([*common, "arm=okapi", "arm.tokenizer=word_lower", "benchmark.record_text=text",
                     f"hydra.run.dir={root / 'okapi'}"]) == 0
    finally:
        os.environ.pop("MEMRUN_DATA_DIR") if saved is None else os.environ.__setitem__("MEMRUN_DATA_DIR", saved)
    return root


def _published(page) -> list[list[str]]:
    return [[c.text_content().strip() for c in row.locator("td").all()]
            for row in page.page.locator("#published tr").all()[1:]]


@pytest.mark.realdata
def test_the_run_page_and_the_compare_page_set_runs_beside_the_published_numbers(browser, outputs, app, shots):
    bm25_entry = next(e for e in load_entries() if e.name == "mceval-locomo-bm25-session")
    run = open_url(browser, app + "run/okapi")
    rows = _published(run)
    row = next(r for r in rows if r[0] == "session_recall@1" and "BM25 (rank_bm25 Okapi)" in r[-1])
    assert row[1] == "54.0" and "memory-core-eval" in row[-1] and bm25_entry.source["version"] in row[-1]
    assert "differs: benchmark.slice.ids_file=" in row[3]  # the first 60 questions, not their 100 ids
    check_fits(run, shots, "view-run-published")
    run.check_clean()

    page = open_url(browser, app + f"compare?a={quote('bm25')}&b={quote('okapi')}")
    rows = _published(page)
    row = next(r for r in rows if r[0] == "session_recall@1" and "BM25 (rank_bm25 Okapi)" in r[-1])
    summary_a = __import__("json").loads((outputs / "bm25" / "summary.json").read_text())
    summary_b = __import__("json").loads((outputs / "okapi" / "summary.json").read_text())
    a_value = summary_a["session"]["overall_all"]["recall@1"]
    b_value = summary_b["session"]["overall_all"]["recall@1"]
    assert row[1] == "54.0" and row[2] == f"{100 * a_value:.1f}" and row[3] == f"{100 * b_value:.1f}"
    setting = row[4]
    assert "A: differs: arm=okapi (run: bm25)" in setting  # each run's own differences, named
    assert "B: differs:" in setting and "arm=okapi (run" not in setting.split("B: differs:")[1]
    assert "memory-core-eval" in row[-1] and "Published numbers for this benchmark (memrun gallery)" in page.page.content()
    check_fits(page, shots, "view-compare-published")
    page.check_clean()
