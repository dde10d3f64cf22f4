"""``memrun view`` in a real headless Chromium, on two real LoCoMo recall runs (bm25 and
bm25_nostop): the text behind every key of an item, the flips between the two runs, and a
run that is still writing (issue 34)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pyarrow.parquet as pq
import pytest

from accuracy.helpers import gold_judge, is_judge
from conftest import memrun_exe
from memrun.cli import main
from memrun.io.live import LIVE_FILE
from report.view_helpers import check_fits, open_url
from servers.openai_server import OpenAIServer, prompt_text


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, data_dir) -> Path:
    root = tmp_path_factory.mktemp("why")
    for arm in ("bm25", "bm25_nostop"):
        assert main(["progress=false", "benchmark=locomo", f"data_dir={data_dir}", f"arm={arm}",
                     f"hydra.run.dir={root / 'locomo' / arm / 'recall'}"]) == 0
    return root


def _rows(outputs: Path, arm: str) -> list[dict]:
    return pq.read_table(outputs / "locomo" / arm / "recall" / "items.parquet").to_pylist()


def _item_url(app: str, arm: str, item_id: str) -> str:
    return f"{app}item/{quote(f'locomo/{arm}/recall')}?{urlencode({'id': item_id})}"


def test_a_recall_item_shows_the_gold_text_and_the_retrieved_texts_gold_marked(browser, outputs, app, shots):
    rows = _rows(outputs, "bm25")
    # an item with two gold records, one retrieved in the top 10 and one not
    row = next(r for r in rows if len(r["gold_keys"]) == 2 and (r["gold_keys"][0] in r["retrieved_keys"])
               != (r["gold_keys"][1] in r["retrieved_keys"]))
    page = open_url(browser, _item_url(app, "bm25", row["item_id"]))
    found, missed = ((0, 1) if row["gold_keys"][0] in row["retrieved_keys"] else (1, 0))
    rank = row["retrieved_keys"].index(row["gold_keys"][found]) + 1
    gold = page.page.locator("#gold li")
    assert gold.count() == 2
    hit, miss = gold.nth(found), gold.nth(missed)
    assert f"retrieved at rank {rank}" in hit.text_content() and row["gold_texts"][found] in hit.text_content()
    assert "missed" in miss.text_content() and row["gold_texts"][missed] in miss.text_content()
    assert "gold-missed" in miss.get_attribute("class")
    retrieved = page.page.locator("#retrieved li")
    assert retrieved.count() == len(row["retrieved_keys"])
    for i, (key, text) in enumerate(zip(row["retrieved_keys"], row["retrieved_texts"])):
        li = retrieved.nth(i)
        assert key in li.text_content() and text in li.text_content()
        assert ("gold-hit" in (li.get_attribute("class") or "")) == (key in row["gold_keys"])
    check_fits(page, shots, "view-item-recall")
    page.check_clean()


def test_the_flips_page_opens_a_b_win_side_by_side(browser, outputs, app, shots):
    a, b = "locomo/bm25/recall", "locomo/bm25_nostop/recall"
    # bm25_nostop differs from bm25 in lexical_scoring: named as the treatment, as the compare page's link does
    page = open_url(browser, f"{app}flips?{urlencode({'a': a, 'b': b, 'treatment': 'lexical_scoring'})}")
    rows = page.page.locator("tbody tr.row")
    sides = [rows.nth(i).locator("td").first.text_content() for i in range(rows.count())]
    assert sides and sides[0] == "win" and sides == sorted(sides, key=lambda s: s != "win")  # B-wins first
    found = None
    for i, side in enumerate(sides):
        if side != "win":
            break
        rows.nth(i).click()
        detail = page.page.locator("tr.detail")
        a_gold = detail.locator(".side[data-side=A] li.gold-hit").count()
        b_gold = detail.locator(".side[data-side=B] li.gold-hit").count()
        if b_gold and not a_gold:
            found = (rows.nth(i).locator("td").nth(1).text_content(), detail)
            break
        rows.nth(i).click()  # close it
    assert found is not None, "no B-win with a gold hit on B's side only"
    item_id, detail = found
    assert "gold records:" in detail.locator(".side[data-side=B]").text_content()
    assert "missed" in detail.locator(".side[data-side=A] .gold-records").text_content()
    # what the page shows is what the runs hold: B's gold hit carries the gold record's text
    row = next(r for r in _rows(outputs, "bm25_nostop") if r["item_id"] == item_id)
    gold_hit = detail.locator(".side[data-side=B] li.gold-hit").first.text_content()
    assert any(text in gold_hit for text in row["gold_texts"])
    # filter by category: every row left is of it
    page.page.locator("tr.detail").evaluate("e => e.remove()")
    category = rows.first.locator("td").nth(2).text_content()
    page.page.select_option("select[data-key=cat]", category)
    assert all(rows.nth(i).locator("td").nth(2).text_content() == category for i in range(rows.count()))
    check_fits(page, shots, "view-flips")
    page.check_clean()


def test_a_run_still_writing_is_marked_running_with_its_progress(browser, outputs, app, shots, tmp_path):
    """An accuracy run against a loopback LLM answering in 0.4 s, 2 calls at a time: while it
    writes, the runs table lists it as running with rows done of the total and calls in flight."""
    folder = outputs / "synthetic" / "bm25" / "accuracy-live"
    with OpenAIServer(latency=0.4) as llm:
        llm.responder = lambda body: gold_judge(prompt_text(body)) if is_judge(prompt_text(body)) else "no idea"
        env = {**os.environ, "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef",
               "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen([*memrun_exe(), "axis=accuracy", "judge=gpt41", "concurrency=2", "progress=false",
                                 f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={folder}"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            live = folder / LIVE_FILE
            for _ in range(600):  # up to 60 s for start-up on a loaded machine
                if live.is_file() and json.loads(live.read_text()).get("done", 0) >= 2:
                    break
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.1)
            page = open_url(browser, app)
            rel = "synthetic/bm25/accuracy-live"
            row = page.page.locator("tbody tr.row", has=page.page.locator(f"input[data-path='{rel}']"))
            assert row.locator("td.lbl-running").text_content() == "running"
            progress = row.text_content()
            assert " of 30 rows" in progress and "calls in flight" in progress
            assert "interrupted" not in progress.lower()
            assert page.page.locator("#notes").text_content().startswith("1 run(s) still running")
            check_fits(page, shots, "view-running")
            page.check_clean()
            run = open_url(browser, f"{app}run/{quote(rel)}")
            assert run.page.locator("#notes").text_content().startswith("RUNNING:")
        finally:
            proc.terminate()
            proc.wait(60)
    assert not (folder / LIVE_FILE).exists()  # stopped: the run removed it (its rows kept, interrupted)
    page = open_url(browser, app)
    row = page.page.locator("tbody tr.row", has=page.page.locator("input[data-path='synthetic/bm25/accuracy-live']"))
    assert row.locator("td.lbl-interrupted").text_content() == "interrupted"  # SIGTERM: kept, marked
