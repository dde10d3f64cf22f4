"""``memrun compare A B --flips`` on two real LoCoMo recall runs, chart labels, and the rule
that an interval over one cluster is never shown (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from memrun.cli import main
from memrun.io.reader import read_instrument
from memrun.report.model import interval_bars, run_labels, shown_interval


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("flips")
    out = []
    for arm in ("bm25", "bm25_nostop"):
        folder = root / arm
        assert main(["progress=false", "benchmark=locomo", f"data_dir={data_dir}", f"arm={arm}",
                     f"hydra.run.dir={folder}"]) == 0
        out.append(folder)
    return out[0], out[1]


def _hits(folder: Path) -> dict[str, bool]:
    rows = pq.read_table(folder / "items.parquet").to_pylist()
    return {r["item_id"]: r["hit_at_5"] for r in rows if r["error"] is None and r["hit_at_5"] is not None
            and r["category"] in ("1", "2", "3", "4")}  # the headline subset compare reads by default


def test_flips_are_the_items_the_runs_disagree_on_b_wins_first(runs, capsys):
    a, b = runs
    capsys.readouterr()
    main(["compare", str(a), str(b), "--treatment", "lexical_scoring", "--flips", "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    ha, hb = _hits(a), _hits(b)
    expected = {i for i in ha if i in hb and ha[i] != hb[i]}
    flips = d["flips"]
    assert {f["item_id"] for f in flips} == expected and len(flips) == len(expected) > 20
    sides = [f["side"] for f in flips]
    assert sides == sorted(sides, key=lambda s: s != "B wins")
    assert sides.count("B wins") == d["overall"]["wins"] and sides.count("B loses") == d["overall"]["losses"]
    for f in flips:
        assert (f["side"] == "B wins") == (hb[f["item_id"]] and not ha[f["item_id"]])
        winner = f["B"] if f["side"] == "B wins" else f["A"]
        loser = f["A"] if f["side"] == "B wins" else f["B"]
        assert any(h["gold"] for h in winner["retrieved"][:5]) and not any(h["gold"] for h in loser["retrieved"][:5])
        assert all(g["text"] for g in f["B"]["gold_records"])


def test_flips_in_text_and_in_the_pull_request_markdown(runs, capsys):
    a, b = runs
    capsys.readouterr()
    main(["compare", str(a), str(b), "--treatment", "lexical_scoring", "--flips"])
    text = capsys.readouterr().out
    assert "flips on recall@5: B wins" in text and text.index("B wins (") < text.index("B loses (")
    main(["compare", str(a), str(b), "--treatment", "lexical_scoring", "--flips", "--format", "markdown"])
    doc = capsys.readouterr().out
    assert "#### Flips on recall@" in doc and "**B wins** (top 5 of" in doc and "**B loses** (top 5 of" in doc
    section = doc[doc.index("#### Flips"):]
    assert section.count("\n- `") == 10  # the top five each way


def test_chart_labels_name_the_arm_and_the_differing_keys(runs):
    labels = run_labels([read_instrument(p) for p in runs])
    assert labels[0].startswith("bm25 ") and labels[1].startswith("bm25_nostop ")
    assert all("/" not in label for label in labels) and "stopwords=" in labels[0]


def test_an_interval_over_fewer_than_three_clusters_is_never_shown():
    one = {"mean": 0.5, "low": 0.5, "high": 0.5, "n_items": 40, "n_clusters": 1}
    assert shown_interval(one) == (None, None)
    assert shown_interval({**one, "low": 0.4, "high": 0.6, "n_clusters": 2}) == (None, None)  # one contrast
    assert shown_interval({**one, "low": 0.4, "high": 0.6, "n_clusters": 3}) == (0.4, 0.6)
    assert shown_interval({**one, "low": 0.4, "high": 0.6, "n_clusters": 3, "unreadable": "df < 1"}) == (None, None)
    summary = {"overall_all": {"recall@5": 0.5, "n_scored": 40}, "per_category": {},
               "intervals": {"metric": "recall@5", "overall_all": one, "per_category": {}}}
    bar = interval_bars(summary)[0]
    assert bar["value"] == 0.5 and bar["low"] is None and bar["high"] is None
