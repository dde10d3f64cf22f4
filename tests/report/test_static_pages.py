"""The static pages people read: charts on round ticks with units, a wide interval that
does not squash the others, labels that do not wrap letter by letter, the sweep page's
multi-arm chart, and every page readable at 1400 and 390 px without sideways scrolling."""

from __future__ import annotations

import math
import re

from memrun.cli import main
from memrun.report import svg
from report.browser import open_page
from report.test_compare_page import changed_copy
from report.view_helpers import check_fits, screenshot_dir


def _ticks(chart: str) -> list[str]:
    return re.findall(r'text-anchor="middle">([^<]+)</text>', chart)


def _round_steps(ticks: list[str]) -> bool:
    """Ticks on one step of 1, 2, 2.5 or 5 times a power of ten, each a multiple of it."""
    values = [float(t.replace("%", "").replace("pp", "").strip()) for t in ticks]
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    if len(steps) != 1:
        return False
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(abs(mantissa - m) < 1e-9 for m in (1, 2, 2.5, 5)) and all(
        abs(v / step - round(v / step)) < 1e-6 for v in values)


def test_forest_ticks_are_round_with_a_unit_and_a_wide_interval_is_clipped():
    rows = [{"name": "overall", "delta": 0.021, "low": -0.004, "high": 0.047},
            {"name": "single-hop", "delta": 0.03, "low": 0.001, "high": 0.061},
            {"name": "temporal", "delta": -0.013, "low": -0.052, "high": 0.027},
            {"name": "adversarial (5 items)", "delta": 0.1, "low": -0.6, "high": 0.7}]
    chart = svg.forest(rows, band=0.02, min_delta=0.0, unit="pp")
    ticks = _ticks(chart)
    assert len(ticks) >= 3 and _round_steps(ticks), ticks
    assert "B - A (pp)" in chart
    span = max(abs(float(t)) for t in ticks)
    assert span <= 15  # the 5-item category does not set the axis: the others stay readable
    assert "-60.0" in chart and "+70.0" in chart  # its clipped ends, written at the markers
    assert chart.count("<path d=\"M") >= 4


def test_nice_ticks_cover_the_range_on_round_steps():
    for low, high in ((-13.7, 13.7), (52.0, 81.0), (0.0, 100.0), (-0.33, 0.33), (3.1, 3.4)):
        ticks = svg.nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high and 3 <= len(ticks) <= 8
        assert _round_steps([str(t) for t in ticks])


def test_static_pages_fit_1400_and_390(browser, recall_dir, accuracy_dir, tmp_path, capsys):
    shots = screenshot_dir(tmp_path / "shots")
    assert main(["report", str(accuracy_dir)]) == 0
    page = open_page(browser, accuracy_dir / "report.html")
    check_fits(page, shots, "report-run-accuracy")
    page.check_clean()
    b = changed_copy(recall_dir, tmp_path / "b", flip=6)
    assert main(["report", str(recall_dir), str(b), "--gate-band", "1"]) == 0
    page = open_page(browser, b / "report-compare.html")
    page.page.set_viewport_size({"width": 390, "height": 900})
    lines = page.page.evaluate(
        "Array.from(document.querySelectorAll('#items td[class*=lbl-]')).map(td => {"
        "const r = document.createRange(); r.selectNodeContents(td); return [td.textContent, r.getClientRects().length]; })")
    assert lines and all(n == 1 for _, n in lines), lines  # "miss", "correct": one line each, never a letter a line
    check_fits(page, shots, "report-compare")
    page.check_clean()
    refused = changed_copy(recall_dir, tmp_path / "r", flip=0, dataset_sha256="0" * 64)
    assert main(["report", str(recall_dir), str(refused), "--out", str(tmp_path / "refused.html")]) == 0
    page = open_page(browser, tmp_path / "refused.html")
    banner = page.page.text_content("#verdict")
    assert banner.startswith("REFUSED: ") and ": (" not in banner and "  " not in banner
    check_fits(page, shots, "report-compare-refused")
    page.check_clean()


def test_sweep_page_has_the_multi_arm_chart(browser, tmp_path, capsys):
    sweep = tmp_path / "sweep"
    assert main(["-m", "progress=false", "arm=bm25,bm25_nostop", f"hydra.sweep.dir={sweep}"]) == 0
    assert main(["report", str(sweep)]) == 0
    page = open_page(browser, sweep / "report.html")
    assert page.page.locator("#arms-chart circle").count() == 2
    assert page.page.locator("#arms-small svg").count() == 3  # one per category
    assert page.page.locator("#arms tr").count() == 3
    assert _round_steps(_ticks(page.page.inner_html("#arms-chart")))
    check_fits(page, screenshot_dir(tmp_path / "shots"), "report-sweep")
    page.check_clean()
