"""Per-category intervals of one run (summary.json's ``intervals``) and the page's status notes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memrun.core.instrument import Instrument
from memrun.io.reader import RunTable
from memrun.metrics.intervals import category_intervals, item_scores, retrieval_headline_metric
from memrun.report.html.run_page import status_notes
from memrun.stats import paired_bootstrap


def _row(item, label, repeat=0, category="1", cluster="c1"):
    return {"item_id": item, "label": label, "repeat": repeat, "category": category, "cluster": cluster,
            "error": None}


def test_accuracy_scores_are_majority_labels_with_the_denominator():
    rows = [_row("a", "correct"), _row("a", "wrong", 1), _row("a", "correct", 2),
            _row("b", "abstain"), _row("c", "error"), _row("d", "wrong", category="2", cluster="c2")]
    assert item_scores(rows, axis="accuracy", metric="accuracy_abstain_wrong") == [
        ("1", "c1", 1.0), ("1", "c1", 0.0), ("2", "c2", 0.0)]
    assert item_scores(rows, axis="accuracy", metric="accuracy") == [("1", "c1", 1.0), ("2", "c2", 0.0)]


def test_intervals_read_the_gates_nominal_union_of_bootstrap_and_small_cluster_t():
    """10 conversations: the percentile bootstrap alone is too narrow (the trial: +/-4.2 pp
    where the cluster-robust t gives +/-5.2); the run's interval is the union the
    comparison gate reads without its design check (memrun.stats.gate, check=False)."""
    from memrun.stats.gate import gate_interval

    rng = np.random.default_rng(0)
    rows = [{"item_id": str(i), "repeat": 0, "category": str(i % 3), "cluster": f"conv{i % 10}", "error": None,
             "hit_at_5": bool(rng.random() < 0.6)} for i in range(300)]
    out = category_intervals(rows, axis="recall", metric="recall@5", comparable_categories=["0", "1"])
    scores, clusters = [float(r["hit_at_5"]) for r in rows], [r["cluster"] for r in rows]
    boot = paired_bootstrap(scores, clusters, seed=7)
    gate = gate_interval(scores, clusters, seed=7)
    block = out["overall_all"]
    assert block["low"] == pytest.approx(gate.low, abs=1e-9) and block["high"] == pytest.approx(gate.high, abs=1e-9)
    assert block["low"] < boot.low and block["high"] > boot.high  # wider than the bootstrap alone
    assert block["bootstrap"] == [boot.low, boot.high] and block["method"] == "cr2_t" and block["df"] == pytest.approx(9)
    assert block["n_clusters"] == 10 and out["overall_comparable"]["n_items"] == 200 and block["unreadable"] is None
    assert set(out["per_category"]) == {"0", "1", "2"}
    assert retrieval_headline_metric([1, 3, 10]) == "recall@10" and retrieval_headline_metric([2]) == "mrr"
    assert retrieval_headline_metric([1, 3, 5, 10], top_k=3) == "recall@1"  # @5, @10 are null past top_k


def test_a_second_cluster_of_one_item_does_not_make_an_interval_readable():
    """The trial: 150 items of conv-26 and 1 of conv-30 gave [44.0, 100.0] under the
    one-cluster rule. Two clusters are one contrast: recorded with the reason, never shown."""
    from memrun.report.html.run_page import headline_text
    from memrun.report.model import interval_bars, shown_interval

    rows = [{"item_id": str(i), "repeat": 0, "category": "4" if i % 2 else "1", "cluster": "conv-26", "error": None,
             "hit_at_5": i % 9 < 4} for i in range(150)]
    rows.append({**rows[0], "item_id": "x", "cluster": "conv-30", "hit_at_5": True})
    out = category_intervals(rows, axis="recall", metric="recall@5", comparable_categories=["1", "4"])
    block = out["overall_comparable"]
    assert block["n_clusters"] == 2 and block["low"] is None and block["high"] is None
    assert "2 cluster(s)" in block["unreadable"]
    assert shown_interval(block) == (None, None)
    assert all(b["low"] is None for b in interval_bars({"overall_comparable": {"recall@5": block["mean"]},
                                                         "overall_all": {"recall@5": block["mean"]},
                                                         "per_category": {}, "intervals": out}))
    line = headline_text({"overall_comparable": {"recall@5": block["mean"]}, "overall_all": {}, "intervals": out},
                         "retrieval")
    assert "[" not in line and "no interval: 2 cluster(s)" in line


def test_every_shown_bound_lies_in_the_metrics_range():
    """Three clusters, one of one item: the t interval on ~1 degree of freedom reaches past
    0 and 100%; the bounds are truncated there (coverage unchanged), and say so."""
    rows = [{"item_id": f"{c}{i}", "repeat": 0, "category": "1", "cluster": c, "error": None, "hit_at_5": hit}
            for c, n, hits in (("a", 40, 38), ("b", 40, 2), ("c", 3, 3)) for i, hit in enumerate([True] * hits + [False] * (n - hits))]
    block = category_intervals(rows, axis="recall", metric="recall@5")["overall_all"]
    assert block["unreadable"] is None and block["truncated"]
    assert 0.0 <= block["low"] <= block["mean"] <= block["high"] <= 1.0


def test_blocks_of_the_same_items_share_one_bootstrap(monkeypatch):
    import memrun.metrics.intervals as intervals

    calls = []
    real = intervals.mean_interval
    monkeypatch.setattr(intervals, "mean_interval", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = [{"item_id": str(i), "repeat": 0, "category": "4", "cluster": f"conv{i % 10}", "error": None,
             "hit_at_5": i % 3 == 0} for i in range(100)]
    out = category_intervals(rows, axis="recall", metric="recall@5", comparable_categories=["4"])
    assert len(calls) == 1  # one category: overall_all, overall_comparable and category 4 are the same items
    assert out["overall_all"] == out["overall_comparable"] == out["per_category"]["4"]
    assert out["overall_all"] is not out["per_category"]["4"]  # copies: editing one block leaves the others
    two = category_intervals([*rows, {**rows[0], "item_id": "x", "category": "5"}], axis="recall",
                             metric="recall@5", comparable_categories=["4"])
    assert two["overall_all"]["n_items"] == 101 and two["overall_comparable"]["n_items"] == 100


def test_the_page_says_what_is_wrong_with_a_run_first():
    def run(inst: Instrument, rows: int = 5) -> RunTable:
        return RunTable(Path("run"), pa.table({"item_id": [f"i{i}" for i in range(rows)]}), inst, complete=True)

    inst = Instrument(status="stopped", fake_providers=True, shard={"missing": [2]})
    notes = status_notes(run(inst), {"stopped": "token budget", "headline": {"partial": True}}, None)
    assert [n.split(":")[0] for n in notes] == ["STOPPED", "STOPPED early", "PARTIAL", "FAKE PROVIDERS"]
    assert "shards 2 missing" in notes[0]
    assert status_notes(run(Instrument(status="complete")), {}, None) == []
    failed = Instrument(status="failed", error="HTTP 401: the server refused the key")
    assert status_notes(run(failed), {}, None) == [
        "FAILED: this run ended failed (HTTP 401: the server refused the key); figures cover the rows it wrote."]
    # one shard of a run read as a whole run's page, with no word (compare warned on it)
    assert status_notes(run(Instrument(status="complete", shard={"count": 3, "index": 0})), {}, None) == [
        "SHARD: this run is shard 0 of 3 of a run, not the whole run; figures cover its items only "
        "(memrun merge the shards' folder for the whole)."]


@pytest.mark.parametrize("denominator", ["accuracy_abstain_wrong", "accuracy"])
def test_a_runs_interval_reads_the_per_item_scores_compare_reads(tmp_path, denominator):
    """Two homes for one rule, kept equal: the run's own intervals collapse rows in Python
    (memrun.metrics.intervals), memrun compare collapses the same rows with Arrow
    (memrun.comparison.pairing). Random labels over repeats, with ties, abstentions and errors."""
    from memrun.comparison.pairing import pair
    from memrun.core.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN
    from memrun.io.reader import read_run
    from run_tables import accuracy_run

    rng = np.random.default_rng(3)
    words = ["correct", "wrong", "abstain", "error"]
    labels = {f"i{n:03d}": [words[k] for k in rng.choice(4, size=int(rng.integers(1, 5)), p=[0.4, 0.3, 0.15, 0.15])]
              for n in range(300)}
    stored = DENOMINATOR_ABSTAIN_WRONG if denominator == "accuracy_abstain_wrong" else DENOMINATOR_EXCLUDE_ABSTAIN
    run = read_run(accuracy_run(tmp_path / "run", labels, denominator=stored))
    paired = pair(run, run, metric=denominator, cluster_by="cluster")
    from_compare = dict(zip(paired.item_ids.to_pylist(), paired.a.tolist()))
    scored = item_scores(run.table.to_pylist(), axis="accuracy", metric=denominator)  # items in first-seen order
    assert len(scored) == len(from_compare) > 100
    assert [s for _, _, s in scored] == list(from_compare.values())
