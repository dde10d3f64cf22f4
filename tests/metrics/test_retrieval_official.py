"""Named variants equal to the benchmarks' own evaluation code: LongMemEval's official preset
(nDCG, corpus, exclusions, session credit) and LoCoMo's evidence-share recall.

Hand-computed cases for each rule, then the official formulas re-implemented here from their
published definitions (LongMemEval ``src/retrieval/eval_utils.py`` and ``run_retrieval.py``)
on a generated LongMemEval file, checked against memrun's preset columns question by question.
"""

from __future__ import annotations

import io
import json
import math
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from conftest import run_memrun
from helpers import DATE, loader, question, turn, write_lme
from memrun.benchmarks import lme_synth
from memrun.config import Axis
from memrun.core.instrument import Instrument
from memrun.errors import ConfigError
from memrun.io.reader import read_run
from memrun.metrics.retrieval import aggregate, item_column_for, item_columns, score_item, score_sessions
from memrun.metrics.retrieval_official import (
    effective_cutoff,
    evidence_share,
    evidence_share_by_k,
    lme_ndcg,
    score_lme_official,
)
from memrun.pipeline.run import execute
from memrun.records import Hit, Record

KS = (1, 3, 5, 10, 30, 50)


# -- LongMemEval: nDCG ---------------------------------------------------------------------


@pytest.mark.parametrize("rank,official,trec", [
    (1, 1.0, 1.0),
    (2, 1.0, 1 / math.log2(3)),  # official: ranks 1 and 2 both count fully
    (3, 1 / math.log2(3), 0.5),  # the case: 0.6309 against 0.5000
])
def test_one_gold_turn_at_rank_r_official_and_trec_ndcg(rank: int, official: float, trec: float) -> None:
    matches = [frozenset()] * (rank - 1) + [frozenset({"g"})] + [frozenset()] * 2
    assert score_item(matches, 1, (5,)).ndcg[5] == pytest.approx(trec)  # type: ignore[union-attr]
    keys = [f"x_{i}" for i in range(rank - 1)] + ["s_1"] + ["y_1", "y_2"]
    result = score_lme_official(keys, {}, ["s_1"], complete=False, ks=(5,))
    assert result is not None and result.ndcg[5] == pytest.approx(official)


def test_two_gold_turns_official_ndcg_by_hand() -> None:
    # gold at ranks 2 and 3 of 2 gold: DCG = 1/log2(2) + 1/log2(3); IDCG = 1 + 1/log2(2) = 2
    assert lme_ndcg([0, 1, 1, 0], 2, 5) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert lme_ndcg([0, 0, 0], 0, 3) == 0.0


# -- LongMemEval: session level, evidence turns, widened cut-off -----------------------------


def test_gold_session_found_only_through_a_non_evidence_turn_is_not_credited() -> None:
    session_of = {"answer_a_1": "answer_a", "answer_a_2": "answer_a", "f_1": "f", "f_2": "f", "g_1": "g"}
    hits = ["answer_a_1", "f_1", "answer_a_2", "g_1"]  # answer_a_1 has no has_answer flag; answer_a_2 does
    memrun = score_sessions(hits, session_of, ["answer_a"], ks=(1, 3))
    assert memrun is not None and memrun.hit[1] is True  # memrun's rule: any turn of the session
    official = score_lme_official(hits, session_of, ["answer_a_2"], complete=True, ks=(1, 2, 3))
    assert official is not None
    # official ids: noans_a (rank 1), f, answer_a, g: one session at K=1 is noans_a, not gold
    assert official.session.hit[1] is False and official.session.first_gold_rank == 3
    assert official.session.hit[2] is False and official.session.hit[3] is True
    # session nDCG@2 reads the turns up to the 2nd distinct session (2 turns): no gold turn;
    # @3 widens to 3 turns: the gold turn at turn rank 3 -> (1/log2 3) / 1
    assert official.session_ndcg[2] == 0.0
    assert official.session_ndcg[3] == pytest.approx(1 / math.log2(3))


def test_effective_cutoff_widens_and_is_unknown_when_hits_are_cut_early() -> None:
    sessions = ["a", "a", "b", "a", "c"]
    assert effective_cutoff(sessions, 1, False) == 1
    assert effective_cutoff(sessions, 2, False) == 3  # two turns cover one session; the 3rd adds b
    assert effective_cutoff(sessions, 3, False) == 5
    assert effective_cutoff(sessions, 4, False) is None  # cut at top_k before a 4th session: not measured
    # ... unless the arm ranked all it could: then at least one turn more per session not reached
    assert effective_cutoff(sessions, 4, True) == 6 and effective_cutoff(["a"], 3, True) == 3
    result = score_lme_official(["a_1", "a_2"], {"a_1": "a", "a_2": "a"}, ["a_1"], complete=False, ks=(1, 2))
    assert result is not None and 2 not in result.session.hit and 2 not in result.session_ndcg
    row = item_columns(result.session, (1, 2), "session_", {"lme_ndcg": result.session_ndcg})
    assert row["session_hit_at_1"] is True and row["session_hit_at_2"] is None and row["session_lme_ndcg_at_2"] is None


def test_fivegold_session_ndcg_ideal_is_set_by_the_gold_not_the_hits() -> None:
    """Issue 31, point 3: five evidence turns, the arm returns three (all evidence) and ranks
    nothing else. The official session nDCG is 0.7387 at every K from 3: its ideal DCG puts
    all five relevant turns first; memrun read 1.0 (an ideal cut at the three hits)."""
    gold = [f"answer_a_{i}" for i in range(1, 6)]
    fillers = [f"f{j}_1" for j in range(60)]
    session_of = {key: key.rsplit("_", 1)[0] for key in gold + fillers}
    hits = gold[:3]
    result = score_lme_official(hits, session_of, gold, complete=True, ks=KS)
    assert result is not None
    expected = _dcg([True] * 3) / _dcg([True] * 5)
    assert expected == pytest.approx(0.7387, abs=5e-5)
    # the official code on its whole-corpus ranking: the hits, then the zero-scored rest in
    # reversed corpus order (np.argsort(scores)[::-1]), the answer session first in the corpus
    ranked = hits + [key for key in reversed(gold + fillers) if key not in hits]
    sessions = [key.rsplit("_", 1)[0] for key in ranked]
    for k in KS:
        cut = k
        while cut < len(sessions) and len(set(sessions[:cut])) < k:
            cut += 1
        official = _evaluate(sessions, {"answer_a"}, cut)[2]
        assert result.session_ndcg[k] == pytest.approx(official), k
        assert result.session_ndcg[k] == pytest.approx(1.0 if k == 1 else expected), k
        assert result.ndcg[k] == pytest.approx(_evaluate(ranked, set(gold), k)[2] if k <= 3 else expected), k


def _assistant_evidence(tmp_path: Path) -> Path:
    sessions = [
        ("f_1", DATE, [turn("user", "hello"), turn("assistant", "hi")]),
        ("answer_q_1", DATE, [turn("user", "recommend a book", False), turn("assistant", "read Dune", True)]),
    ]
    return write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"], qtype="single-session-assistant")])


def test_assistant_evidence_question_is_left_out_by_the_official_preset(tmp_path: Path) -> None:
    path = _assistant_evidence(tmp_path)
    memrun_ds = loader(path).load(tmp_path)
    (item,) = next(iter(memrun_ds.groups)).items
    assert item.gold_keys == ("answer_q_1_2",)  # memrun's default indexes assistant turns: scored
    official_ds = loader(path, preset="official").load(tmp_path)
    group = next(iter(official_ds.groups))
    assert [r.key for r in group.records] == ["f_1_1", "answer_q_1_1"]  # user turns only
    assert group.items[0].gold_keys == () and group.items[0].gold_sessions == ()
    assert official_ds.counts["retrieval_excluded_no_target_turn"] == 1
    assert official_ds.split == "s/user-turns" and official_ds.preset == "official"


def test_empty_user_turns_are_records_under_the_official_preset(tmp_path: Path) -> None:
    sessions = [("answer_q_1", DATE, [turn("user", " ", False), turn("assistant", ""), turn("user", "red car", True)])]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"])])
    default = next(iter(loader(path).load(tmp_path).groups))
    official_ds = loader(path, preset="official").load(tmp_path)
    official = next(iter(official_ds.groups))
    assert [r.key for r in default.records] == ["answer_q_1_3"]
    assert [r.key for r in official.records] == ["answer_q_1_1", "answer_q_1_3"]  # the official corpus
    assert official.records[0].text == "user:  " and official_ds.counts["turns_empty"] == 2


def test_official_gold_is_found_by_the_answer_mark_and_abs_anywhere_in_the_id(tmp_path: Path) -> None:
    sessions = [
        ("answer_x_1", DATE, [turn("user", "my car is blue", True)]),  # named answer, not listed as evidence
        ("ev_2", DATE, [turn("user", "my bike is red", True)]),  # listed as evidence, not named answer
    ]
    q1 = question("q1", sessions, ["ev_2"])
    q2 = question("q2_abs_v2", [("answer_y_1", DATE, [turn("user", "z", True)])], ["answer_y_1"])
    q3 = question("q3", [("ev_3", DATE, [turn("user", "only outside", True)])], ["ev_3"])
    path = write_lme(tmp_path / "f.json", [q1, q2, q3])
    ds = loader(path, preset="official").load(tmp_path)
    items = {i.item_id: i for g in ds.groups for i in g.items}
    assert items["q1"].gold_keys == ("answer_x_1_1",) and items["q1"].gold_sessions == ("answer_x_1",)
    assert items["q2_abs_v2"].gold_keys == () and not items["q2_abs_v2"].abstention  # excluded, not an _abs suffix
    assert items["q3"].gold_keys == ()
    assert ds.counts["official_gold_differs"] == 2 and ds.counts["official_scored_without_gold"] == 1
    assert ds.counts["retrieval_excluded_abstention"] == 1
    assert items["q3"].extra["official_no_gold"] and "official_no_gold" not in items["q1"].extra
    # the official script keeps q3 with no gold: any([]) is 0, all([]) is 1, nDCG 0, at both levels
    cfg = OmegaConf.create({
        "benchmark": {"_target_": "memrun.benchmarks.longmemeval.LongMemEval", "name": "longmemeval", "split": "s",
                      "files": {"s": {"file": "x.json"}}, "path": str(path), "categories": {}, "ks": [1, 3],
                      "preset": "official"},
        "arm": {"_target_": "helpers.ReverseArm", "name": "reverse", "top_k": 3},
        "axis": Axis.recall, "repeats": 1, "seed": 7, "data_dir": str(tmp_path), "ks": None, "progress": False,
    })
    execute(cfg, tmp_path / "run", Console(file=io.StringIO()))
    rows = {r["item_id"]: r for r in read_run(tmp_path / "run").table.to_pylist()}
    q3 = rows["q3"]
    for prefix in ("", "session_"):
        assert q3[f"{prefix}rr"] == 0.0 and q3[f"{prefix}hit_at_3"] is False and q3[f"{prefix}all_at_3"] is True
        assert q3[f"{prefix}lme_ndcg_at_3"] == 0.0
    assert rows["q2_abs_v2"]["rr"] is None and rows["q1"]["hit_at_1"] is False and rows["q1"]["hit_at_3"] is True


def test_preset_config_errors_name_the_key_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"benchmark.preset=offical: choose one of memrun, official"):
        loader(Path("x.json"), preset="offical")
    with pytest.raises(ConfigError, match=r"preset=official indexes user turns only.*set it to \[user\]"):
        loader(Path("x.json"), preset="official", roles=["user", "assistant"])


def test_preset_and_granularity_are_comparability_fields() -> None:
    fields = Instrument.comparability_fields()
    assert "retrieval_preset" in fields and "granularity" in fields
    a, b = Instrument(retrieval_preset="memrun"), Instrument(retrieval_preset="official")
    assert [d.field for d in a.diff(b)] == ["retrieval_preset"]
    turns = Instrument(granularity="record; session: top K turns")
    assert [d.field for d in turns.diff(Instrument(granularity="record; session: top K sessions"))] == ["granularity"]


# -- LoCoMo: evidence share and session crediting --------------------------------------------


def test_evidence_share_reads_the_raw_strings_with_the_three_quirks() -> None:
    context = ["D1:3", "D8:6", "D9:17", "D30:5"]
    assert evidence_share(["D1:3", "D1:99"], context) == 0.5  # a dangling id stays in the denominator
    assert evidence_share(["D8:6; D9:17; D9:18"], context) == 0.0  # three ids in one string: never found
    assert evidence_share(["D30:05"], context) == 0.0  # written another way: never found
    assert evidence_share([], context) == 1.0 and evidence_share(["D1:3"], []) == 1.0  # the official 1s
    by_session = evidence_share_by_k(["D30:05", "D8:6; D9:17; D9:18", "D:11:26"], context, (2, 4),
                                     {"D1:3": "session_1", "D8:6": "session_8", "D30:5": "session_30"}, per_session=True)
    assert by_session == {2: pytest.approx(1 / 3), 4: pytest.approx(2 / 3)}  # D30, D8 found; "D:11:26" names none
    assert evidence_share_by_k(["D1:3", "D8:6"], context, (1, 2)) == {1: 0.5, 2: 1.0}


def test_evidence_share_averages_over_items_without_gold_too() -> None:
    rows = [{**item_columns(score_item([frozenset({"g"})], 1, (5,)), (5,), named={"evidence_share": {5: 0.5}})},
            {**item_columns(None, (5,), named={"evidence_share": {5: 0.0}})}]  # a dangling-only item: unscored
    summary = aggregate(rows, (5,))
    assert summary["n_scored"] == 1 and summary["recall@5"] == 1.0
    assert summary["evidence_share@5"] == 0.25  # both items, as the official mean over all questions
    assert "lme_ndcg@5" not in summary  # a variant nobody asked for is not reported
    assert item_column_for("session_evidence_share@5") == "session_evidence_share_at_5"
    assert item_column_for("lme_ndcg@10") == "lme_ndcg_at_10"


def test_session_credit_counts_turns_or_distinct_sessions() -> None:
    session_of = {"D1:1": "session_1", "D1:2": "session_1", "D2:1": "session_2", "D8:6": "session_8"}
    hits = ["D1:1", "D1:2", "D8:6"]  # the gold turn D8:5 is not retrieved, its session is
    by_turns = score_sessions(hits, session_of, ["session_8"], ks=(2, 3), per="turns")
    by_sessions = score_sessions(hits, session_of, ["session_8"], ks=(2, 3))
    assert by_turns is not None and by_sessions is not None
    assert (by_turns.hit[2], by_turns.hit[3], by_turns.first_gold_rank) == (False, True, 3)
    assert (by_sessions.hit[2], by_sessions.first_gold_rank) == (True, 2)  # 2 distinct sessions reach it
    all_turns = score_sessions(hits, session_of, ["session_8", "session_2"], ks=(3,), per="turns")
    assert all_turns is not None and all_turns.hit[3] and not all_turns.all[3]


@pytest.mark.realdata
def test_locomo10_evidence_quirks_cost_evidence_share_even_with_every_gold_turn_retrieved(data_dir: Path) -> None:
    from memrun.benchmarks.locomo import LoCoMo

    ds = LoCoMo(split="locomo10", file="locomo10.json", url=None, sha256=None, categories={}).load(data_dir)
    items = {i.item_id: i for i in ds.items()}
    perfect = {i: evidence_share(item.gold_keys_raw, item.gold_keys) for i, item in items.items()}
    assert perfect["conv-47:38"] == pytest.approx(2 / 3)  # D4:36 names no turn: dangling
    assert perfect["conv-49:31"] == 0.0  # "D9:1 D4:4 D4:6": three ids in one string
    assert perfect["conv-50:69"] == 0.0 and items["conv-50:69"].gold_keys == ("D30:5",)  # "D30:05"
    assert perfect["conv-26:30"] == 1.0 and items["conv-26:30"].gold_keys_raw == ()  # no evidence counts 1
    assert items["conv-50:69"].gold_sessions == ("session_30",)
    assert items["conv-49:31"].gold_sessions == ("session_9", "session_4")
    assert all(i.gold_sessions for i in items.values() if i.gold_keys)


def _official_rag_recall(evidence: list[str], context: list[str], by_session: bool) -> float:
    """LoCoMo's RAG recall of one question, written from ``eval_question_answering``
    (task_eval/evaluation.py): the share of the evidence strings as written found in the
    context ids, by the session number ``ev.split(':')[0][1:]`` in summary mode; 1 when
    there is no evidence (or no context)."""
    if not evidence or not context:
        return 1.0
    if by_session:
        sessions = [c.split(":")[0][1:] for c in context]
        return sum(e.split(":")[0][1:] in sessions for e in evidence) / len(evidence)
    return sum(e in context for e in evidence) / len(evidence)


@pytest.mark.realdata
def test_locomo10_bm25_evidence_share_equals_the_official_rag_recall_item_by_item(data_dir: Path, tmp_path: Path) -> None:
    """The figures issue 26 measured with the official code on BM25 top 5 (dialog level 0.4542,
    by session 0.7782), from memrun's own run of the documented command, question by question."""
    proc = run_memrun(["benchmark=locomo", "arm=bm25", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"],
                      cwd=tmp_path, env={"MEMRUN_DATA_DIR": str(data_dir)})
    assert proc.returncode == 0, proc.stderr
    raw = {f"{c['sample_id']}:{i}": [str(e) for e in q.get("evidence") or []]
           for c in json.loads((data_dir / "locomo10.json").read_text()) for i, q in enumerate(c["qa"])}
    rows = read_run(tmp_path / "run").table.to_pylist()
    assert len(rows) == len(raw) == 1986
    shares: dict[bool, list[float]] = {False: [], True: []}
    for row in rows:
        top = list(row["retrieved_keys"])[:5]
        for by_session, column in ((False, "evidence_share_at_5"), (True, "session_evidence_share_at_5")):
            expected = _official_rag_recall(raw[row["item_id"]], top, by_session)
            assert row[column] == pytest.approx(expected), (row["item_id"], column)
            shares[by_session].append(expected)
    assert round(sum(shares[False]) / len(rows), 4) == 0.4542 and round(sum(shares[True]) / len(rows), 4) == 0.7782
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["overall_all"]["evidence_share@5"] == pytest.approx(sum(shares[False]) / len(rows))
    assert summary["session"]["overall_all"]["evidence_share@5"] == pytest.approx(sum(shares[True]) / len(rows))


def _locomo(tmp_path: Path) -> Path:
    turns = {n: [{"speaker": "A", "dia_id": f"D{n}:{i}", "text": f"s{n} t{i}"} for i in (1, 2, 3, 4, 5, 6)] for n in (1, 8, 9, 30)}
    conv: dict[str, Any] = {}
    for n, ts in turns.items():
        conv[f"session_{n}"], conv[f"session_{n}_date_time"] = ts, "1 May 2023"
    qa = [{"question": "q", "answer": "a", "evidence": ["D8:6; D9:1", "D30:05", "D1:99"], "category": 1}]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "c", "conversation": conv, "qa": qa}]))
    return path


def test_locomo_gold_sessions_and_the_run_fills_session_and_evidence_share_columns(tmp_path: Path) -> None:
    _locomo(tmp_path)
    cfg = OmegaConf.create({
        "benchmark": {"_target_": "memrun.benchmarks.locomo.LoCoMo", "name": "locomo", "split": "locomo10",
                      "file": "locomo10.json", "url": None, "sha256": None, "categories": {1: "multi-hop"},
                      "expected_counts": None, "ks": [1, 5]},
        "arm": {"_target_": "helpers.ReverseArm", "name": "reverse", "top_k": 5},
        "axis": Axis.recall, "repeats": 1, "seed": 7, "data_dir": str(tmp_path), "ks": None, "progress": False,
    })
    out = io.StringIO()
    summary = execute(cfg, tmp_path / "run", Console(file=out, width=80))
    assert "evidence_share, overall_all: @1 0.0 @5 0.0" in out.getvalue()
    assert "session_evidence_share, overall_all: @1 33.3 @5 33.3" in out.getvalue()
    run = read_run(tmp_path / "run")
    (row,) = run.table.to_pylist()
    assert row["gold_keys"] == ["D8:6", "D9:1", "D30:5"] and row["gold_sessions"] == ["session_8", "session_9", "session_30"]
    # ReverseArm: D30:6, D30:5, D30:4, D30:3, D30:2 -> D30:5 at rank 2; sessions: 30 only
    assert row["first_gold_rank"] == 2 and row["session_first_gold_rank"] == 1
    assert row["session_hit_at_1"] and not row["session_all_at_5"]
    assert row["evidence_share_at_5"] == 0.0  # none of the raw strings is a retrieved id
    assert row["session_evidence_share_at_5"] == pytest.approx(1 / 3)  # "D30:05" names session 30
    assert summary["overall_all"]["evidence_share@5"] == 0.0
    assert run.instrument.granularity == "record; session: top K turns" and run.instrument.retrieval_preset is None
    # K distinct sessions: the 24 turns reach sessions 30, 9, 8, 1 -> "D30:05", "D8:6; D9:1" (session 8)
    # and "D1:99" (session 1) all name a reached session, while the top 5 turns lie in session 30 only
    cfg.benchmark.session_cut, cfg.arm.top_k = "sessions", 24
    execute(cfg, tmp_path / "sessions", Console(file=io.StringIO()))
    sessions_run = read_run(tmp_path / "sessions")
    (row,) = sessions_run.table.to_pylist()
    assert row["session_evidence_share_at_5"] == 1.0 and row["session_evidence_share_at_1"] == pytest.approx(1 / 3)
    assert row["session_all_at_5"] and not row["session_all_at_1"] and row["evidence_share_at_5"] == 0.0
    assert sessions_run.instrument.granularity == "record; session: top K sessions"


# -- the official formulas, re-implemented, on a generated file ------------------------------


class OverlapArm:
    """Ranks every record by shared words with the question plus a fixed pseudo-random noise
    (so gold turns land at ranks 1, 2, 3, ... and beyond the cut-offs)."""

    def __init__(self) -> None:
        self.records: Sequence[Record] = ()

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self.records = records

    def search(self, query: str, k: int) -> list[Hit]:
        words = set(query.lower().split())

        def score(r: Record) -> tuple[int, int]:
            noise = zlib.crc32((query + r.key).encode())
            return len(words & set(r.text.lower().split())) + noise % 4, noise

        ranked = sorted(self.records, key=score, reverse=True)[:k]
        return [Hit(r.key, float(len(ranked) - i), r.text) for i, r in enumerate(ranked)]

    def close(self) -> None:
        self.records = ()


def _official_corpus(q: dict[str, Any]) -> dict[str, str]:
    """memrun key -> the official corpus id: user turns, ``answer`` sessions' other turns renamed."""
    ids = {}
    for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"]):
        for n, t in enumerate(session, start=1):
            if t["role"] == "user":
                official = f"{sid}_{n}"
                if "answer" in sid and t.get("has_answer") is not True:
                    official = official.replace("answer", "noans")
                ids[f"{sid}_{n}"] = official
    return ids


def _dcg(relevant: Sequence[bool]) -> float:
    # the published discount: rank 1 weighs 1, rank i >= 2 weighs 1/log2(i)
    return sum(1 / max(1.0, math.log2(i)) for i, r in enumerate(relevant, start=1) if r)


def _evaluate(ranked: list[str], correct: set[str], k: int) -> tuple[bool, bool, float]:
    top = set(ranked[:k])
    n_relevant = sum(x in correct for x in ranked)
    ideal = _dcg([True] * min(k, n_relevant))
    return bool(correct & top), correct <= top, (_dcg([x in correct for x in ranked[:k]]) / ideal) if ideal else 0.0


def _official(q: dict[str, Any], ranked_keys: list[str]) -> dict[str, Any] | None:
    """One question's official turn and session metrics; None when the official script skips it."""
    user_turns = [t for s in q["haystack_sessions"] for t in s if t["role"] == "user"]
    if "_abs" in q["question_id"] or not any(t.get("has_answer") for t in user_turns):
        return None
    corpus = _official_corpus(q)
    ranked = [corpus[k] for k in ranked_keys]
    assert len(ranked) == len(corpus)  # the arm ranked the whole corpus
    correct = {x for x in corpus.values() if "answer" in x}
    out: dict[str, Any] = {}
    session = [x.rsplit("_", 1)[0] for x in ranked]
    correct_sessions = {x.rsplit("_", 1)[0] for x in correct}
    for k in KS:
        out[f"hit_at_{k}"], out[f"all_at_{k}"], out[f"lme_ndcg_at_{k}"] = _evaluate(ranked, correct, k)
        cut = k
        while cut < len(session) and len(set(session[:cut])) < k:
            cut += 1
        hit, full, ndcg = _evaluate(session, correct_sessions, cut)
        out[f"session_hit_at_{k}"], out[f"session_all_at_{k}"], out[f"session_lme_ndcg_at_{k}"] = hit, full, ndcg
    return out


def test_preset_columns_equal_the_official_formulas_question_by_question(tmp_path: Path) -> None:
    spec = lme_synth.SynthSpec(questions=60, sessions=12, turns=6, turn_chars=60, pool_uses=3, abstention=0.1, seed=3)
    path = tmp_path / "lme.json"
    lme_synth.write(path, spec)
    cfg = OmegaConf.create({
        "benchmark": {"_target_": "memrun.benchmarks.longmemeval.LongMemEval", "name": "longmemeval", "split": "s",
                      "files": {"s": {"file": "x.json"}}, "path": str(path), "categories": {}, "ks": list(KS),
                      "preset": "official"},
        "arm": {"_target_": "metrics.test_retrieval_official.OverlapArm", "name": "overlap", "top_k": 10_000},
        "axis": Axis.recall, "repeats": 1, "seed": 7, "data_dir": str(tmp_path), "ks": None, "progress": False,
    })
    execute(cfg, tmp_path / "run", Console(file=io.StringIO()))
    run = read_run(tmp_path / "run")
    assert run.instrument.retrieval_preset == "official" and run.instrument.split == "s/user-turns"
    rows = {r["item_id"]: r for r in run.table.to_pylist()}
    questions = json.loads(path.read_text())
    scored = differs = 0
    for q in questions:
        row = rows[q["question_id"]]
        expected = _official(q, row["retrieved_keys"])
        if expected is None:
            assert row["rr"] is None and row["session_rr"] is None, q["question_id"]
            continue
        scored += 1
        for column, value in expected.items():
            assert row[column] == pytest.approx(value), (q["question_id"], column)
        differs += any(row[f"ndcg_at_{k}"] != pytest.approx(row[f"lme_ndcg_at_{k}"]) for k in KS)
    types = {q["question_type"] for q in questions if _official(q, rows[q["question_id"]]["retrieved_keys"])}
    assert scored >= 40 and "single-session-assistant" not in types  # assistant evidence: left out
    assert differs >= 5  # the two nDCGs are different metrics on this file
    _check_cut_hits(tmp_path, cfg, questions)
    ranks = {r["first_gold_rank"] for r in rows.values()}
    assert {1, 2, 3} <= ranks and max(r or 0 for r in ranks) > 5


def _check_cut_hits(tmp_path: Path, cfg: Any, questions: list[dict[str, Any]]) -> None:
    """With hits cut at top_k = 6, a session K is measured only when the 6 hits reach K sessions."""
    cfg.arm.top_k = 6
    summary = execute(cfg, tmp_path / "cut", Console(file=io.StringIO()))
    rows = {r["item_id"]: r for r in read_run(tmp_path / "cut").table.to_pylist()}
    (warning,) = [w for w in summary["warnings"] if w.startswith("session metrics not measured")]
    assert "arm.top_k=6" in warning and "@5 (" in warning and "@10" not in warning  # @10 > top_k: warned elsewhere
    measured = unmeasured = 0
    for q in questions:
        row = rows[q["question_id"]]
        if row["rr"] is None:
            continue
        corpus = _official_corpus(q)
        reached = len({corpus[k].rsplit("_", 1)[0] for k in row["retrieved_keys"]})
        for k in (1, 3, 5):
            assert (row[f"session_hit_at_{k}"] is None) == (reached < k), (q["question_id"], k)
            measured += reached >= k
            unmeasured += reached < k
        assert row["session_hit_at_10"] is None and row["hit_at_10"] is None  # K > top_k
    assert measured and unmeasured
