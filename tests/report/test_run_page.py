"""memrun report RUN: the page, the summary's intervals, and the page in a real Chromium."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from memrun.cli import main
from memrun.report.html.run_page import render_run
from report.browser import open_page, rows_shown, wait_rows


def _report(run: Path, capsys) -> Path:
    assert main(["report", str(run)]) == 0
    assert f"wrote {run / 'report.html'}" in capsys.readouterr().out
    return run / "report.html"


def test_summary_holds_per_category_intervals(recall_dir):
    intervals = json.loads((recall_dir / "summary.json").read_text())["intervals"]
    assert intervals["metric"] == "recall@5" and intervals["seed"] == 7 and intervals["resamples"] == 10_000
    for block in [intervals["overall_all"], *intervals["per_category"].values()]:
        if block["unreadable"]:  # e.g. a category every item of which hits: nothing varies
            assert block["low"] is None and block["high"] is None
        else:
            assert 0 <= block["low"] <= block["mean"] <= block["high"] <= 1
    assert set(intervals["per_category"]) == {"single-hop", "multi-hop", "temporal"} or intervals["per_category"]


def test_the_page_is_self_contained_and_deterministic(recall_dir, capsys):
    html = _report(recall_dir, capsys).read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html
    assert "<script src" not in html and "<link" not in html
    assert render_run(recall_dir) == html  # same run, same bytes
    assert "recall@5" in html and "95% intervals: cluster bootstrap" in html


def test_run_page_in_chromium(browser, recall_dir, tmp_path, capsys):
    page = open_page(browser, _report(recall_dir, capsys))
    assert "synthetic" in page.page.text_content("#instrument")
    assert rows_shown(page) == 30
    page.page.select_option("select[data-key=label]", "miss")
    misses = json.loads((recall_dir / "summary.json").read_text())["overall_all"]["recall@5"]
    assert rows_shown(page) == round(30 * (1 - misses))
    page.page.select_option("select[data-key=label]", "")
    page.page.fill("#search", "zzz-no-such-text")
    wait_rows(page, 0)
    page.page.fill("#search", "")
    wait_rows(page, 30)
    page.page.locator("tbody tr.row").first.click()
    detail = page.page.text_content("tr.detail")  # the texts of a recall run's records (issue 34)
    assert "gold records:" in detail and "(retrieved at rank 1)" in detail and "retrieved (gold in bold)" in detail
    page.page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    page.check_clean()


def test_accuracy_page_in_chromium(browser, accuracy_dir, tmp_path, capsys):
    page = open_page(browser, _report(accuracy_dir, capsys))
    assert "MemScore" in page.page.text_content("#headline")
    summary = json.loads((accuracy_dir / "summary.json").read_text())
    wrong = summary["overall_all"]["wrong"]
    assert wrong > 0
    page.page.select_option("select[data-key=label]", "wrong")
    assert rows_shown(page) == wrong
    assert set(page.page.locator("tbody tr.row td.lbl-wrong").all_text_contents()) == {"wrong"}
    page.page.select_option("select[data-key=label]", "")
    stage, n = sorted(summary["failure_stages"].items())[0]
    page.page.select_option("select[data-key=stage]", stage)
    assert rows_shown(page) == n
    page.page.locator("tbody tr.row").first.click()
    assert "judge explanation" in page.page.text_content("tr.detail")
    assert page.page.locator("tr.detail ol li").count() >= 1  # the retrieved texts, on expand
    page.page.screenshot(path=str(tmp_path / "accuracy.png"), full_page=True)
    page.check_clean()


def test_an_interrupted_run_still_renders_and_says_so(browser, recall_dir, tmp_path, capsys):
    broken = tmp_path / "broken"
    (broken / "items.parts").mkdir(parents=True)
    shutil.copy(recall_dir / "items.parquet", broken / "items.parts" / "part-00000.parquet")
    page = open_page(browser, _report(broken, capsys))
    notes = page.page.text_content("#notes")
    assert "INTERRUPTED" in notes and "recomputed from the 30 rows" in notes
    assert rows_shown(page) == 30
    page.check_clean()


def test_a_100k_row_page_opens_paged(browser, tmp_path):
    from memrun.report.html.common import embed_json, render

    rows = [{"id": f"i{i}", "cat": f"c{i % 7}", "q": f"question {i}", "label": "hit" if i % 2 else "miss",
             "keys": [[f"k{i}", 1]]} for i in range(100_000)]
    table = {"columns": [["id", "item"], ["cat", "category"], ["q", "question"], ["label", "label", "label"],
                         ["keys", "keys", "keys"]], "filters": [["cat", "category"], ["label", "label"]],
             "detail": [["q", "question"]], "page": 50}
    html = tmp_path / "big.html"
    html.write_text(render("base.html.j2", title="big", notes=[], rows=embed_json(rows), table=embed_json(table),
                           n_rows=len(rows)))
    page = open_page(browser, html)
    assert rows_shown(page) == 50
    page.page.select_option("select[data-key=cat]", "c3")
    assert page.page.text_content("#count") == "14286 of 100000"
    page.page.click("#next")
    assert page.page.locator("tbody tr.row").first.get_attribute("data-index") == "50"
    page.check_clean()


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"memrun: error: {tmp_path / 'nope'}: no such file or folder\n"
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("memrun: error: ")
