"""Run-level checks (memrun/pipeline/checks.py) on real LoCoMo runs: every expected value is
recomputed here by a plain loop over the rows the run wrote.

Duplicate hits, keys the arm never received, cut-offs beyond top_k, empty searches,
a limit that keeps every item, repeats on the recall axis, and every warning saved in
summary.json and the instrument.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from arms.support import compose_run, run_in_process
from memrun.cli import main
from memrun.config import BENCHMARK_RESERVED_KEYS
from memrun.core.plugins import build
from memrun.io.reader import read_run

pytestmark = pytest.mark.realdata

LOCOMO = ["benchmark=locomo", "arm=bm25", "progress=false"]


def faulty(name: str) -> list[str]:
    """Overrides that run ``tests/arms/faulty.py``'s arm ``name`` in place of bm25's class."""
    return [f"arm._target_=arms.faulty.{name}", f"arm.name={name}"]


@pytest.fixture(scope="module")
def histories(data_dir: Path) -> dict[str, set[str]]:
    """LoCoMo conversation -> the record keys and session ids of its history."""
    benchmark = build(compose_run(["benchmark=locomo"]).benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    return {g.history_id: {r.key for r in g.records} | {r.session for r in g.records if r.session}
            for g in benchmark.load(data_dir).groups}


def run(tmp_path: Path, name: str, *overrides: str) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    """Run LoCoMo in-process; (summary, rows, instrument)."""
    out = tmp_path / name
    summary = run_in_process([*LOCOMO, *overrides], out)
    table = read_run(out)
    return summary, table.table.to_pylist(), table.instrument


def distinct(keys: list[str]) -> list[str]:
    out: list[str] = []
    for key in keys:
        if key not in out:
            out.append(key)
    return out


def by_hand(rows: list[dict[str, Any]], k: int) -> dict[str, float]:
    """recall@k, precision@k, nDCG@k and MRR over scored rows: each key once, at its first rank."""
    totals = {"recall": 0.0, "precision": 0.0, "ndcg": 0.0, "mrr": 0.0}
    scored = [r for r in rows if r["error"] is None and r["gold_keys"]]
    for r in scored:
        gold = set(r["gold_keys"])
        ranking = distinct(r["retrieved_keys"])
        top = ranking[:k]
        relevant = [key in gold for key in top]
        totals["recall"] += any(relevant)
        totals["precision"] += sum(relevant) / k  # trec_eval's P@k: divided by k
        dcg = sum(1 / math.log2(i + 2) for i, hit in enumerate(relevant) if hit)
        totals["ndcg"] += dcg / sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
        first = next((i + 1 for i, key in enumerate(ranking) if key in gold), None)
        totals["mrr"] += 1 / first if first else 0.0
    return {name: value / len(scored) for name, value in totals.items()}


def test_a_repeated_best_record_is_credited_once(tmp_path) -> None:
    summary, rows, instrument = run(tmp_path, "repeat", "ks=[1,5]", *faulty("RepeatingArm"))
    assert all(len(set(r["retrieved_keys"])) <= 1 and r["n_retrieved"] in (0, 5) for r in rows)  # rows keep the arm's hits
    expected = by_hand(rows, 5)
    overall = summary["overall_all"]
    assert overall["precision@5"] == pytest.approx(expected["precision"])
    assert overall["recall@5"] == pytest.approx(expected["recall"]) and overall["mrr"] == pytest.approx(expected["mrr"])
    assert overall["ndcg@5"] == pytest.approx(expected["ndcg"])
    # one distinct hit: precision@5 is recall@1 / 5, far from the 1.0 the repeats claimed
    assert overall["precision@5"] == pytest.approx(overall["recall@1"] / 5) and overall["precision@5"] <= 0.2
    repeated = sum(1 for r in rows if len(set(r["retrieved_keys"])) < len(r["retrieved_keys"]))
    assert summary["arm_checks"]["duplicate_keys"] == repeated > 1000
    line = f"the arm returned a key more than once on {repeated} of 1986 items"
    assert any(w.startswith(line) for w in summary["warnings"]) and summary["warnings"] == instrument.warnings


def test_repeating_the_best_record_no_longer_passes_compare_on_precision(tmp_path, capsys) -> None:
    """The issue's input: an arm returning its best record 5 times PASSed bm25 by +25 pp on
    compare --metric precision@5. precision@5 now divides by 5: it fails."""
    from memrun.commands.compare import main as compare_main

    run(tmp_path, "bm25")
    run(tmp_path, "repeat", *faulty("RepeatingArm"))
    code = compare_main([str(tmp_path / "bm25"), str(tmp_path / "repeat"), "--metric", "precision@5", "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"]["outcome"] == "fail" and d["overall"]["high"] < 0


def test_hits_beyond_top_k_are_not_scored(tmp_path, capsys) -> None:
    """An arm returning 3 x top_k hits of bm25's ranking had a higher MRR than bm25 and PASSed
    compare --metric mrr; only the first top_k hits are scored, so its metrics equal bm25's."""
    from memrun.commands.compare import main as compare_main

    bm25, _, _ = run(tmp_path, "bm25")
    deep, rows, _ = run(tmp_path, "deep", *faulty("OverTopKArm"))
    assert all(r["n_retrieved"] > 10 for r in rows if r["retrieved_keys"] and len(r["retrieved_keys"]) > 10)
    assert deep["overall_all"]["mrr"] == bm25["overall_all"]["mrr"]
    assert deep["arm_checks"]["over_top_k"] > 1000
    code = compare_main([str(tmp_path / "bm25"), str(tmp_path / "deep"), "--metric", "mrr", "--format", "json"])
    assert code == 2 and json.loads(capsys.readouterr().out)["overall"]["delta"] == 0.0


def test_a_repeated_key_takes_no_rank(tmp_path) -> None:
    """Each hit twice: the distinct ranking is bm25's top 5, so every metric @K <= 5 equals bm25's."""
    stutter, rows, _ = run(tmp_path, "stutter", *faulty("StutterArm"))
    bm25, bm25_rows, _ = run(tmp_path, "bm25")
    assert all(r["n_retrieved"] == 2 * len(set(r["retrieved_keys"])) for r in rows)
    reference = {r["item_id"]: r for r in bm25_rows}
    for r in rows:
        ref = reference[r["item_id"]]
        assert distinct(r["retrieved_keys"]) == ref["retrieved_keys"][:5]
        for column in ("hit_at_1", "hit_at_3", "hit_at_5", "precision_at_5", "ndcg_at_5"):
            assert r[column] == pytest.approx(ref[column]), column
        if ref["rr"] is not None:
            assert r["rr"] == pytest.approx(ref["rr"] if ref["rr"] >= 1 / 5 else 0.0)
        assert r["hit_at_10"] == ref["hit_at_5"]  # only five distinct keys: nothing beyond rank 5
    for k in (1, 5, 10):
        assert stutter["overall_all"][f"recall@{k}"] == pytest.approx(by_hand(rows, k)["recall"])
    assert stutter["overall_all"]["mrr"] == pytest.approx(by_hand(rows, 10)["mrr"])
    assert stutter["arm_checks"]["duplicate_keys"] == sum(1 for r in rows if r["n_retrieved"] > len(set(r["retrieved_keys"])))


def test_keys_the_arm_never_received_make_retrieval_not_measurable(tmp_path, data_dir, histories, capsys) -> None:
    out = tmp_path / "own"
    code = main([*LOCOMO, *faulty("OwnIdsArm"), f"hydra.run.dir={out}", f"data_dir={data_dir}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("memrun: error: arm=OwnIdsArm: retrieval metrics are not measurable: ")
    summary = json.loads((out / "summary.json").read_text())
    run_table = read_run(out)  # the rows are kept
    rows = run_table.table.to_pylist()
    unknown = sum(1 for r in rows for key in r["retrieved_keys"] if key not in histories[r["cluster"]])
    hits = sum(len(r["retrieved_keys"]) for r in rows)
    assert summary["arm_checks"]["unknown_keys"] == unknown == hits > 0
    assert summary["not_measurable"].startswith(f"{unknown} of {hits} hits (100.0%, at least 95%) name no record")
    blocks = [summary["overall_all"], summary["overall_comparable"], *summary["per_category"].values()]
    assert all(b[m] is None for b in blocks for m in ("mrr", "recall@1", "recall@10", "precision@5", "ndcg@10"))
    assert blocks[0]["n_scored"] == 1982  # counts stay
    assert any(w.startswith("retrieval metrics not measurable") for w in run_table.instrument.warnings)
    assert summary["warnings"] == run_table.instrument.warnings
    # the rows' metric columns hold zeros that measure nothing: compare refuses the run
    from memrun.commands.compare import main as compare_main

    run(tmp_path, "bm25")
    assert compare_main([str(tmp_path / "bm25"), str(out)]) == 3
    err = capsys.readouterr().err
    assert "refused: a run's retrieval metrics are not measurable" in err and str(out) in err


def test_session_ids_are_known_keys_and_half_unknown_only_warns(tmp_path, histories) -> None:
    sessions, rows, _ = run(tmp_path, "sessions", *faulty("SessionIdsArm"))
    assert all(key.startswith("session_") for r in rows for key in r["retrieved_keys"])
    assert sessions["arm_checks"]["unknown_keys"] == 0 and "not_measurable" not in sessions
    assert sessions["overall_all"]["recall@10"] == 0.0  # measured: sessions never match LoCoMo's turn gold

    half, rows, instrument = run(tmp_path, "half", *faulty("HalfOwnIdsArm"))
    unknown = sum(1 for r in rows for key in r["retrieved_keys"] if key not in histories[r["cluster"]])
    hits = sum(len(r["retrieved_keys"]) for r in rows)
    assert half["arm_checks"]["unknown_keys"] == unknown and 0.4 < unknown / hits < 0.6
    assert "not_measurable" not in half and half["overall_all"]["recall@10"] == pytest.approx(by_hand(rows, 10)["recall"])
    assert any(w.startswith(f"{unknown} of {hits} hits") for w in half["warnings"])


def test_cutoffs_beyond_top_k_are_null_and_top_k_defaults_to_max_ks(tmp_path) -> None:
    capped, rows, instrument = run(tmp_path, "capped", "ks=[1,5,20]", "arm.top_k=10")
    assert all(r["hit_at_20"] is None and r["ndcg_at_20"] is None and r["hit_at_5"] is not None
               for r in rows if r["gold_keys"])
    assert capped["overall_all"]["recall@20"] is None and capped["overall_all"]["recall@5"] is not None
    line = next(w for w in capped["warnings"] if w.startswith("arm.top_k=10 < K for @20"))
    assert line in instrument.warnings and capped["warnings"] == instrument.warnings

    full, rows, instrument = run(tmp_path, "full", "ks=[1,5,20]")
    assert instrument.config["arm"]["top_k"] == 20 and max(r["n_retrieved"] for r in rows) == 20
    assert full["overall_all"]["recall@20"] == pytest.approx(by_hand(rows, 20)["recall"])
    assert full["warnings"] == []
    # the accuracy axis keeps 10 hits for the reader, whatever the reported cut-offs
    assert compose_run(["axis=accuracy", "ks=[1,50]"]).arm.top_k == 10
    assert compose_run(["ks=[1,50]"]).arm.top_k == 50 and compose_run(["ks=[1,50]", "arm.top_k=7"]).arm.top_k == 7


def test_empty_searches_and_every_warning_saved_in_both_places(tmp_path) -> None:
    summary, rows, instrument = run(tmp_path, "late", *faulty("LateIndexArm"), "benchmark.limit=5000",
                                    "ks=[1,20]", "arm.top_k=10")
    empty = sum(1 for r in rows if r["error"] is None and r["n_retrieved"] == 0)
    assert summary["arm_checks"]["empty_searches"] == empty and empty > 0.2 * len(rows)
    assert summary["warnings"] == instrument.warnings
    starts = ["benchmark.limit=5000 keeps all 1986 items", "arm.top_k=10 < K for @20",
              f"{empty} of 1986 searches ({100 * empty / 1986:.1f}%, more than 1%) returned no hit",
              # an empty search is credited by evidence_share's convention: counted and warned (issue 31)
              f"evidence_share@K, session_evidence_share@K: {empty - 3} items credited by a convention"]
    assert [w[:len(s)] for w, s in zip(summary["warnings"], starts)] == starts and len(summary["warnings"]) == 4


def test_a_limit_that_keeps_every_item_is_no_slice(tmp_path, histories) -> None:
    summary, rows, instrument = run(tmp_path, "limit", "benchmark.limit=100000")
    assert len(rows) == 1986 and instrument.slice is None and summary["slice"] is None
    assert summary["warnings"] == instrument.warnings == [
        "benchmark.limit=100000 keeps all 1986 items left after slicing and sampling: it is no slice, "
        "so the run's slice does not name it"]
    n_three = sum(1 for r in rows if r["category"] == "3")
    sliced, _, instrument = run(tmp_path, "cat3", "benchmark.slice.category=[3]", f"benchmark.limit={n_three}")
    assert instrument.slice == "category=3" and sliced["n_items"] == n_three
    _, _, instrument = run(tmp_path, "cat3-short", "benchmark.slice.category=[3]", f"benchmark.limit={n_three - 1}")
    assert instrument.slice == f"category=3;limit={n_three - 1}"


def test_repeats_on_the_recall_axis_is_refused_in_one_line(tmp_path, capsys) -> None:
    assert main(["repeats=3", f"hydra.run.dir={tmp_path / 'r'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memrun: error: repeats=3: axis=recall searches and scores each item once")
    assert not (tmp_path / "r").exists()


def test_unknown_keys_on_the_accuracy_axis_void_only_the_retrieval_block(llm_env, tmp_path, data_dir) -> None:
    """The headline does not read retrieval: the run goes on, its retrieval block is null,
    and no miss is put down to a retrieval that cannot be seen."""
    from accuracy.helpers import execute_run, gold_judge, is_judge
    from servers.openai_server import prompt_text

    llm_env.responder = lambda body: gold_judge(prompt_text(body)) if is_judge(prompt_text(body)) else "no idea"
    out, _ = execute_run(tmp_path, "benchmark=locomo", "benchmark.limit=40", "judge=gpt41", f"data_dir={data_dir}",
                         *faulty("OwnIdsArm"))
    summary = json.loads((out / "summary.json").read_text())
    run_table = read_run(out)
    rows = run_table.table.to_pylist()
    assert summary["retrieval"]["not_measurable"] and summary["retrieval"]["overall_all"]["recall@10"] is None
    assert "not_measurable" not in summary and summary["headline"]["value"] is not None
    wrong = [r for r in rows if r["label"] == "wrong"]
    assert wrong and not any(r["failure_stage"] == "retrieval_ranking" for r in rows)
    assert summary["warnings"] == run_table.instrument.warnings
    assert any(w.startswith("retrieval metrics not measurable") for w in summary["warnings"])
