"""memrun report A B: the comparison page, refusals included, in a real Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.cli import main
from memrun.core.instrument import METADATA_KEY, Instrument
from memrun.io.metadata import seal_table
from report.browser import open_page, rows_shown


def changed_copy(run: Path, folder: Path, flip: int, **instrument: object) -> Path:
    """A copy of ``run``'s rows as another run: a new run id, hit@5 flipped on the first
    ``flip`` scored rows, ``instrument`` fields replaced."""
    table = pq.read_table(run / "items.parquet")
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta.update(run_id=f"{meta['run_id']}-copy", **instrument)
    hits = table.column("hit_at_5").to_pylist()
    flipped = [not h if i < flip and h is not None else h for i, h in enumerate(hits)]
    table = table.set_column(table.schema.get_field_index("hit_at_5"), "hit_at_5", pa.array(flipped))
    folder.mkdir(parents=True)
    pq.write_table(seal_table(table, Instrument.from_json(json.dumps(meta))), folder / "items.parquet")
    return folder


def test_compare_page_in_chromium(browser, recall_dir, tmp_path, capsys):
    b = changed_copy(recall_dir, tmp_path / "b", flip=6)
    assert main(["report", str(recall_dir), str(b), "--gate-band", "1"]) == 0
    html = b / "report-compare.html"
    assert capsys.readouterr().out == f"wrote {html}\n"
    page = open_page(browser, html)
    banner = page.page.text_content("#verdict")
    assert any(o in banner for o in ("PASS", "FAIL", "UNRESOLVED")) and "exit code" in banner
    assert page.page.locator("svg circle").count() >= 2  # overall and the categories
    assert page.page.locator("#comparability tr").count() > 10
    assert rows_shown(page) == 6
    losses = [r for r in page.page.locator("tbody tr.row").all_text_contents()]
    sides = [page.page.locator("tbody tr.row").nth(i).locator("td").first.text_content() for i in range(6)]
    assert sides == sorted(sides, key=lambda x: x != "win")  # the flips: B-wins first, then B-losses
    page.page.select_option("select[data-key=side]", sides[-1])
    assert 0 < rows_shown(page) == sides.count(sides[-1]) and len(losses) == 6
    page.page.locator("tbody tr.row").first.click()
    detail = page.page.locator("tr.detail")  # A and B side by side, with the hits' texts (issue 34)
    assert detail.locator(".side[data-side=A] ol.hits li").count() > 0
    assert "invoices" in detail.locator(".side[data-side=B]").text_content()
    page.page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    page.check_clean()


def test_a_refusal_renders_with_its_reason(browser, recall_dir, tmp_path, capsys):
    b = changed_copy(recall_dir, tmp_path / "b", flip=0, dataset_sha256="0" * 64)
    out = tmp_path / "refused.html"
    assert main(["report", str(recall_dir), str(b), "--out", str(out)]) == 0
    page = open_page(browser, out)
    banner = page.page.text_content("#verdict")
    assert banner.startswith("REFUSED") and "exit code 3" in banner
    assert "dataset_sha256" in page.page.text_content("#reason")
    differs = page.page.locator("#comparability tr.diff td").first.text_content()
    assert differs == "dataset_sha256"
    page.check_clean()


def test_treatment_fields_are_marked(recall_dir, tmp_path):
    b = changed_copy(recall_dir, tmp_path / "b", flip=2, search_mode="semantic")
    out = tmp_path / "t.html"
    assert main(["report", str(recall_dir), str(b), "--out", str(out), "--treatment", "search_mode"]) == 0
    html = out.read_text()
    assert '<tr class="treat" title="another search mode is an ablation, not the same system"><td>search_mode' in html


def test_bad_compare_options_are_one_line(recall_dir, tmp_path, capsys):
    b = changed_copy(recall_dir, tmp_path / "b", flip=1)
    assert main(["report", str(recall_dir), str(b), "--metric", "bogus@5"]) == 2
    assert capsys.readouterr().err.startswith("memrun: error: ")


def test_compare_page_says_a_run_is_not_whole_and_holds_its_verdict(tmp_path):
    """The page noted 'did not finish' and 'ended <status>' only: shard 0 of a run compared
    as the whole run, with no note, under a PASS banner (compare warned on it)."""
    from memrun.report.html.compare_page import compare_context
    from run_tables import retrieval_run, wtl

    a, b = wtl(60, 140, 0)
    clusters = [f"c{i % 8}" for i in range(200)]
    ra = retrieval_run(tmp_path / "a", a, clusters, shard={"count": 3, "index": 0})
    rb = retrieval_run(tmp_path / "b", b, clusters, shard={"count": 3, "index": 0})
    context = compare_context(str(ra), str(rb), ["--resamples", "1000"])
    assert "A is shard 0 of 3 of a run, not the whole run (memrun merge the shards' folder for the whole)" in context["notes"]
    assert context["banner"]["outcome"] == "unresolved" and context["banner"]["reason"] == "unfinished run"
