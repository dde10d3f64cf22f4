"""memrun report SWEEP_DIR: the sweep page and every job's run page, in a real Chromium."""

from __future__ import annotations

from memrun.cli import main
from report.browser import open_page, rows_shown


def test_sweep_page_in_chromium(browser, tmp_path, capsys):
    sweep = tmp_path / "sweep"
    assert main(["-m", "progress=false", "arm=bm25,bm25_nostop", f"hydra.sweep.dir={sweep}"]) == 0
    (sweep / "2_synthetic_bm25" / ".hydra").mkdir(parents=True)  # a job killed before it wrote anything
    capsys.readouterr()
    assert main(["report", str(sweep)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"wrote {sweep / 'report.html'}\n" and "wrote 2 job page(s)" in captured.err
    page = open_page(browser, sweep / "report.html")
    assert "job 2 unknown" in page.page.text_content("#notes")
    assert rows_shown(page) == 3
    page.page.click("th[data-key=job]")
    page.page.click("th[data-key=job]")  # descending
    assert page.page.locator("tbody tr.row td").first.text_content() == "2"
    page.page.select_option("select[data-key=status]", "complete")
    assert rows_shown(page) == 2
    page.page.screenshot(path=str(tmp_path / "sweep.png"), full_page=True)
    page.check_clean()
    page.page.click("tbody tr.row a")  # a relative link to the job's own page
    page.page.wait_for_selector("body[data-ready='1']")
    assert page.page.url.endswith("_synthetic_bm25_nostop/report.html") or page.page.url.endswith(
        "_synthetic_bm25/report.html")
    assert rows_shown(page) == 30
    page.check_clean()
