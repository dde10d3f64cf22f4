"""``memrun failures`` on recall runs, and the texts every run records (issue 34).

The items listed are exactly those with no gold in the top K, read back from the Parquet
file by pyarrow; each shows the question, the gold records' text (rank or missed) and the
top hits' text, grouped by category, in text, JSON and markdown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from memrun.cli import main
from memrun.metrics.by_category import category_order


@pytest.fixture(scope="module")
def locomo_run(tmp_path_factory, data_dir) -> Path:
    out = tmp_path_factory.mktemp("locomo") / "bm25"
    assert main(["progress=false", "benchmark=locomo", f"data_dir={data_dir}", "arm=bm25",
                 f"hydra.run.dir={out}"]) == 0
    return out


def _misses(folder: Path, k: int) -> list[dict]:
    rows = pq.read_table(folder / "items.parquet").to_pylist()
    return [r for r in rows if r["error"] is None and r[f"hit_at_{k}"] is False]


def test_a_recall_run_records_the_text_behind_every_key(locomo_run):
    rows = pq.read_table(locomo_run / "items.parquet").to_pylist()
    with_gold = [r for r in rows if r["gold_keys"]]
    assert with_gold and all(len(r["gold_texts"]) == len(r["gold_keys"]) for r in with_gold)
    assert all(len(r["retrieved_texts"]) == len(r["retrieved_keys"]) for r in rows)
    # a hit on a gold key carries the same text as the gold record (both are the turn's text)
    r = next(r for r in with_gold if r["gold_keys"][0] in r["retrieved_keys"])
    assert r["retrieved_texts"][r["retrieved_keys"].index(r["gold_keys"][0])] == r["gold_texts"][0]
    assert all(t and ":" in t for t in r["gold_texts"])  # "Speaker: text"


@pytest.mark.parametrize("k", [5, 1])
def test_failures_lists_exactly_the_items_with_no_gold_in_the_top_k(locomo_run, capsys, k):
    capsys.readouterr()
    assert main(["failures", str(locomo_run), "--format", "json", "--k", str(k), "--hits", "3"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = _misses(locomo_run, k)
    assert len(expected) > 50
    assert sorted(i["item_id"] for i in listed) == sorted(r["item_id"] for r in expected)
    by_id = {r["item_id"]: r for r in expected}
    for item in listed:
        row = by_id[item["item_id"]]
        assert item["question"] == row["question"] and item["gold"] == row["answer"]
        assert [g["key"] for g in item["gold_records"]] == row["gold_keys"]
        assert [g["text"] for g in item["gold_records"]] == row["gold_texts"]
        assert all(g["rank"] is None or g["rank"] > k for g in item["gold_records"])  # none in the top K
        assert [h["text"] for h in item["retrieved"]] == row["retrieved_texts"][:3]
        assert not any(h["gold"] for h in item["retrieved"][:k])
    cats = [category_order(i["category"]) for i in listed]
    assert cats == sorted(cats)  # grouped by category


def test_failures_text_and_markdown_show_the_same_texts(locomo_run, capsys):
    miss = _misses(locomo_run, 5)[0]
    capsys.readouterr()
    assert main(["failures", str(locomo_run), "--format", "md", "--category", miss["category"]]) == 0
    doc = capsys.readouterr().out
    assert doc.startswith("# memrun failures") and f"## category {miss['category']}" in doc
    assert miss["question"].split()[0] in doc and "(missed)" in doc
    assert main(["failures", str(locomo_run), "--category", miss["category"], "--limit", "1"]) == 0
    text = capsys.readouterr().out
    assert "question" in text and "gold" in text and "1 of" in text and "recall@5 misses" in text


def test_failures_refuses_a_k_the_run_did_not_measure(locomo_run, capsys):
    capsys.readouterr()
    assert main(["failures", str(locomo_run), "--k", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "recall@7" in err[0] and "--k" in err[0]


def test_failures_refuses_a_k_past_the_runs_top_k_and_defaults_to_a_k_it_measured(tmp_path, capsys):
    """arm.top_k=3 leaves recall@5 and @10 null in every row: --k 5 listed no item ("0 of 0
    ... 30 without retrieval gold"), as if no item had gold, and so did the default K."""
    run = tmp_path / "k3"
    assert main(["progress=false", "benchmark=synthetic", "arm=bm25", "arm.top_k=3", f"hydra.run.dir={run}"]) == 0
    capsys.readouterr()
    assert main(["failures", str(run), "--k", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memrun: error: memrun failures: {run}/items.parquet did not measure recall@5: its arm.top_k=3 "
                   "retrieved 3 hits, too few for K=5; choose --k from 1, 3"]
    assert main(["failures", str(run), "--json"]) == 0  # the run's headline K, which it measured
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert "(recall@1 misses) written" in summary and " 0 without retrieval gold" in summary, summary


def test_failures_on_a_run_whose_top_k_is_below_every_k_is_a_user_error(tmp_path, capsys):
    """ks=[5,10] with arm.top_k=3 measures no recall@K: the default K was 'mrr', read as
    recall@K, an IndexError traceback; --k 5 and the default both name the depth to re-run with."""
    run = tmp_path / "k3"
    assert main(["progress=false", "benchmark=synthetic", "arm=bm25", "ks=[5,10]", "arm.top_k=3",
                 f"hydra.run.dir={run}"]) == 0
    capsys.readouterr()
    assert main(["failures", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memrun: error: memrun failures: {run}/items.parquet measured no recall@K: its arm.top_k=3 "
                   "retrieved fewer hits than its smallest K (5); re-run with arm.top_k at least 5"]
    assert main(["failures", str(run), "--k", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "too few for K=5" in err[0] and "re-run with arm.top_k" in err[0], err


def test_a_category_no_item_has_is_named_and_a_label_is_read_as_its_category(tmp_path, capsys):
    """--category multi-hop (a label) or a typo printed "0 of 0 items ... shown | not misses: 0 hit",
    which reads as a category without misses."""
    from run_tables import retrieval_run

    run = retrieval_run(tmp_path / "run", [False, True, False, False])  # categories 1 (odd), 2 (even), alternating
    assert main(["failures", str(run), "--category", "nope", "--json"]) == 2
    err = capsys.readouterr().err
    assert "--category nope: no item of" in err and "its categories: 1 (odd), 2 (even)" in err
    assert main(["failures", str(run), "--category", "1", "--json"]) == 0
    by_raw = capsys.readouterr().out
    assert main(["failures", str(run), "--category", "odd", "--json"]) == 0
    assert capsys.readouterr().out == by_raw and len(by_raw.splitlines()) == 2  # items 0 and 2 missed
