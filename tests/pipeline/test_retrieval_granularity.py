"""Session- and turn-granularity metrics against hand-computed values and the official rule."""

from __future__ import annotations

import io
import math
import random
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from helpers import DATE, question, turn, write_lme
from memrun.config import Axis
from memrun.io.reader import read_run
from memrun.metrics.retrieval import (
    aggregate,
    item_column_for,
    item_columns,
    metric_columns,
    score_item,
    score_sessions,
    session_ranking,
)
from memrun.pipeline.run import execute

SESSION_OF = {"a_1": "A", "b_1": "B", "a_2": "A", "c_1": "C", "b_2": "B"}
HITS = ["a_1", "b_1", "a_2", "c_1", "b_2"]


def test_session_ranking_keeps_first_appearance_and_passes_unknown_keys() -> None:
    assert session_ranking(HITS, SESSION_OF) == ["A", "B", "C"]
    assert session_ranking(["X", "a_1"], SESSION_OF) == ["X", "A"]  # an arm returning session ids


def test_session_scores_by_hand() -> None:
    s = score_sessions(HITS, SESSION_OF, ["B", "C"], ks=(1, 2, 3))
    assert s is not None
    assert (s.first_gold_rank, s.rr) == (2, 0.5)
    assert s.hit == {1: False, 2: True, 3: True}  # recall_any@K
    assert s.all == {1: False, 2: False, 3: True}  # recall_all@K
    assert s.precision[3] == pytest.approx(2 / 3)
    idcg = 1 + 1 / math.log2(3)
    assert s.ndcg[3] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / idcg)  # ranks 2 and 3
    assert score_sessions(HITS, SESSION_OF, [], ks=(1,)) is None


def test_turn_scores_by_hand() -> None:
    gold = {"b_1", "c_1"}
    s = score_item([frozenset(gold & {h}) for h in HITS], len(gold), ks=(1, 2, 4, 5))
    assert s is not None
    assert s.hit == {1: False, 2: True, 4: True, 5: True}
    assert s.all == {1: False, 2: False, 4: True, 5: True}
    idcg = 1 + 1 / math.log2(3)
    assert s.ndcg[4] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / idcg)  # turns at ranks 2 and 4


def _official_turn2session(ranked_turns: list[str], session_of: dict[str, str], gold: set[str], k: int):
    """LongMemEval's rule, restated: widen K until the top turns cover K sessions, then any/all."""
    sessions = [session_of[t] for t in ranked_turns]
    effective = k
    while effective <= len(sessions) and len(set(sessions[:effective])) < k:
        effective += 1
    top = set(sessions[:effective])
    return bool(gold & top), gold <= top


def test_session_recall_matches_the_official_turn_to_session_rule() -> None:
    rng = random.Random(0)
    for _ in range(300):
        n_sessions = rng.randint(1, 8)
        turns = [f"s{s}_{t}" for s in range(n_sessions) for t in range(rng.randint(1, 4))]
        session_of = {t: t.split("_")[0] for t in turns}
        rng.shuffle(turns)
        gold = set(rng.sample(sorted(set(session_of.values())), rng.randint(1, n_sessions)))
        ks = (1, 2, 3, 5, 10)
        ours = score_sessions(turns, session_of, gold, ks)
        assert ours is not None
        for k in ks:
            assert (ours.hit[k], ours.all[k]) == _official_turn2session(turns, session_of, gold, k)


def test_columns_aggregate_and_metric_names_for_both_granularities() -> None:
    cols = metric_columns((1, 5))
    assert "hit_at_5" in cols and "session_hit_at_5" in cols and "session_ndcg_at_1" in cols
    s = score_sessions(HITS, SESSION_OF, ["B"], ks=(1, 5))
    row = {**item_columns(None, (1, 5)), **item_columns(s, (1, 5), "session_")}
    assert row["rr"] is None and row["session_rr"] == 0.5 and row["session_hit_at_1"] is False
    assert aggregate([row], (1, 5), "session_")["recall@5"] == 1.0
    assert aggregate([row], (1, 5))["n_scored"] == 0
    assert item_column_for("session_recall@5") == "session_hit_at_5"
    assert item_column_for("session_mrr") == "session_rr"
    with pytest.raises(ValueError, match="optionally prefixed session_"):
        item_column_for("session_recall")


def test_run_writes_both_granularities_and_task_averages(tmp_path: Path) -> None:
    """End to end with a fixed ranking (records last-first), values computed by hand."""
    q1 = question("q1", [  # evidence turn last: rank 1 at both granularities
        ("f1", DATE, [turn("user", "filler one"), turn("assistant", "filler two")]),
        ("answer_q1_1", DATE, [turn("user", "nothing", False), turn("user", "my car is blue", True)]),
    ], ["answer_q1_1"])
    q2 = question("q2", [  # evidence turn first of three sessions: turn rank 5, session rank 3
        ("answer_q2_1", DATE, [turn("user", "my bike is green", True)]),
        ("f2", DATE, [turn("user", "x one"), turn("assistant", "x two")]),
        ("f3", DATE, [turn("user", "y one"), turn("assistant", "y two")]),
    ], ["answer_q2_1"], qtype="multi-session")
    q3 = question("q3_abs", [("answer_q3_1", DATE, [turn("user", "z", True)])], ["answer_q3_1"], qtype="multi-session")
    path = write_lme(tmp_path / "lme.json", [q1, q2, q3])
    cfg = OmegaConf.create({
        "benchmark": {
            "_target_": "memrun.benchmarks.longmemeval.LongMemEval", "name": "longmemeval", "split": "s",
            "files": {"s": {"file": "x.json"}}, "path": str(path), "categories": {}, "ks": [1, 3, 5],
        },
        "arm": {"_target_": "helpers.ReverseArm", "name": "reverse", "top_k": 10},
        "axis": Axis.recall, "repeats": 1, "seed": 7, "data_dir": str(tmp_path), "ks": None, "progress": False,
    })
    summary = execute(cfg, tmp_path / "run", Console(file=io.StringIO()))
    table = read_run(tmp_path / "run").table.to_pylist()
    rows = {r["item_id"]: r for r in table}
    assert rows["q1"]["first_gold_rank"] == 1 and rows["q1"]["session_first_gold_rank"] == 1
    assert rows["q2"]["first_gold_rank"] == 5 and rows["q2"]["session_first_gold_rank"] == 3
    assert rows["q2"]["hit_at_3"] is False and rows["q2"]["session_hit_at_3"] is True
    assert rows["q3_abs"]["rr"] is None and rows["q3_abs"]["session_rr"] is None and rows["q3_abs"]["abstention"]
    assert rows["q2"]["gold_sessions"] == ["answer_q2_1"]
    # overall = mean over the 2 scored items; task-averaged = mean over the 2 types (one item each here)
    assert summary["overall_all"]["mrr"] == pytest.approx((1 + 1 / 5) / 2)
    assert summary["session"]["overall_all"]["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert summary["task_averaged"]["recall@5"] == pytest.approx(1.0)
    assert summary["session"]["task_averaged"]["recall@1"] == pytest.approx(0.5)
    assert summary["n_abstention"] == 1 and summary["n_unscored"] == 1
    instrument = read_run(tmp_path / "run").instrument
    assert instrument.ks == [1, 3, 5]  # the benchmark's ks: the top-level ks is null
    assert instrument.load_counts["retrieval_excluded_abstention"] == 1
    assert instrument.n_items == 3 and instrument.slice is None
