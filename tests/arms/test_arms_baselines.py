"""full_context and oracle on real LoCoMo; the run's top_k checks; BM25 on LoCoMo end to end."""

from __future__ import annotations

import pytest

from arms.support import run_in_process
from memrun.arms.full_context import FullContextArm, truncate
from memrun.arms.oracle import OracleArm
from memrun.errors import ArmError
from memrun.io.reader import read_run
from memrun.pipeline.checks import HitChecks
from memrun.pipeline.one_history import Retrieved
from memrun.records import Hit, Item, Record

RECORDS = [Record(f"D{s}:{i}", "x" * 10, session=f"session_{s}") for s in (1, 2) for i in (1, 2, 3)]


def test_truncation_policy() -> None:
    assert truncate(RECORDS, max_records=None, max_chars=None, keep="last") == RECORDS
    assert [r.key for r in truncate(RECORDS, max_records=2, max_chars=None, keep="last")] == ["D2:2", "D2:3"]
    assert [r.key for r in truncate(RECORDS, max_records=None, max_chars=35, keep="first")] == ["D1:1", "D1:2", "D1:3"]
    arm = FullContextArm(max_chars=25)
    arm.ingest("h", RECORDS)
    assert [h.key for h in arm.search("anything", 1)] == ["D2:2", "D2:3"]  # history order, k ignored
    assert (arm.truncated_histories, arm.dropped_records) == (1, 4)
    assert arm.describe() == {"search_mode": "full_context", "truncation": "keep last, max_chars=25"}
    with pytest.raises(ArmError, match="arm.keep='middle'"):
        FullContextArm(keep="middle")


def test_oracle_levels_and_gold_rules() -> None:
    item = Item("i", "h", "h", "1", "q?", None, "null", gold_keys=("D2:1",))
    arm = OracleArm()
    arm.ingest("h", RECORDS)
    assert [h.key for h in arm.search_item(item, 10, "key")] == ["D2:1"]
    session = OracleArm(level="session")
    session.ingest("h", RECORDS)
    assert [h.key for h in session.search_item(item, 1, "key")] == ["D2:1", "D2:2", "D2:3"]
    by_session = Item("j", "h", "h", "1", "q?", None, "null", gold_keys=(), gold_sessions=("session_1",))
    assert [h.key for h in session.search_item(by_session, 1, "key")] == ["D1:1", "D1:2", "D1:3"]
    arm.ingest("h", [Record("a", "we moved to Oslo"), Record("b", "the cat")])
    by_phrase = Item("i", "h", "h", "1", "q", None, "null", gold_keys=("oslo",))
    assert [h.key for h in arm.search_item(by_phrase, 5, "substring")] == ["a"]  # the dataset's rule decides
    with pytest.raises(ArmError, match="search_item"):
        arm.search("q", 1)


def _retrieved(item_id: str, n_hits: int | None, n_records: int) -> Retrieved:
    """An item whose search returned ``n_hits`` of its history's records (None: failed)."""
    records = [Record(f"r{i}", "x") for i in range(n_records)]
    hits = None if n_hits is None else [Hit(r.key, 1.0) for r in records[:n_hits]]
    item = Item(item_id, "h", "h", "1", "q?", None, "null", ("r0",))
    return Retrieved(item, hits, 1.0, None if hits is not None else "search: boom",
                     history=frozenset(r.key for r in records), n_records=n_records)


def test_hit_checks_count_items_not_lines() -> None:
    items = [_retrieved("s1", 3, 3), _retrieved("b0", 5, 6), _retrieved("b1", 4, 6), _retrieved("b2", None, 6)]

    def checked(top_k: int, search_mode: str = "lexical") -> HitChecks:
        checks = HitChecks(top_k, search_mode)
        for r in items:
            checks.observe(r)
        return checks

    checks = checked(4)
    assert checks.counts == {"n_searches": 3, "n_hits": 12, "over_top_k": 1, "history_within_top_k": 1,
                             "duplicate_keys": 0, "unknown_keys": 0, "empty_searches": 0, "textless_hits": 12}
    assert checks.warnings() == ["the arm returned more than top_k=4 hits on 1 of 3 items",
                                 "top_k=4 >= the number of records in the history for 1 of 3 items: "
                                 "retrieval is bypassed there"]
    assert checked(10).warnings() == [
        "top_k=10 >= the number of records in the history for 3 of 3 items: retrieval is bypassed there"]
    assert checked(4, "full_context").warnings() == [
        "search_mode=full_context does not rank: its retrieval figures are not a retrieval result"]


@pytest.mark.realdata
def test_full_context_on_locomo(locomo, tmp_path) -> None:
    out = tmp_path / "run"
    summary = run_in_process(["benchmark=locomo", "arm=full_context", "arm.max_records=300"], out)
    run = read_run(out)
    sizes = {g.history_id: [r.key for r in g.records] for g in locomo.groups}
    rows = run.table.select(["item_id", "retrieved_keys", "n_retrieved"]).to_pylist()
    assert len(rows) == 1986
    for row in rows:
        history = sizes[row["item_id"].rsplit(":", 1)[0]]
        assert row["retrieved_keys"] == history[-300:] and row["n_retrieved"] == 300  # the last 300, in order
    assert run.instrument.search_mode == "full_context"
    assert summary["arm_checks"]["over_top_k"] == 1986
    assert summary["arm_checks"]["unknown_keys"] == 0 and "not_measurable" not in summary  # records are known keys
    assert any("does not rank" in w for w in run.instrument.warnings)
    assert run.instrument.config["arm"]["max_records"] == 300  # the truncation policy is recorded


@pytest.mark.realdata
def test_oracle_on_locomo_is_the_upper_bound(locomo, tmp_path) -> None:
    out = tmp_path / "run"
    summary = run_in_process(["benchmark=locomo", "arm=oracle"], out)
    rows = read_run(out).table.select(["gold_keys", "retrieved_keys", "first_gold_rank"]).to_pylist()
    for row in rows:
        assert row["retrieved_keys"] == [k for k in row["retrieved_keys"] if k in row["gold_keys"]]
        assert set(row["retrieved_keys"]) == set(row["gold_keys"])
        assert row["first_gold_rank"] == (1 if row["gold_keys"] else None)
    assert summary["overall_all"]["recall@1"] == 1.0 and summary["overall_all"]["mrr"] == 1.0
    assert summary["arm_checks"]["unknown_keys"] == 0 and "not_measurable" not in summary
    assert summary["arm_checks"]["empty_searches"] == sum(1 for it in locomo.items() if not it.gold_keys)
    assert summary["overall_all"]["n_scored"] == sum(1 for it in locomo.items() if it.gold_keys)


@pytest.mark.realdata
def test_oracle_sessions_on_locomo(locomo) -> None:
    arm = OracleArm(level="session")
    group = locomo.groups[0]
    arm.ingest(group.history_id, group.records)
    session_of = {r.key: r.session for r in group.records}
    for item in group.items[:50]:
        keys = [h.key for h in arm.search_item(item, 10, "key")]
        assert set(item.gold_keys) <= set(keys)
        assert {session_of[k] for k in keys} == {session_of[g] for g in item.gold_keys}


@pytest.mark.realdata
def test_bm25_on_locomo_reports_no_bypass(tmp_path) -> None:
    summary = run_in_process(["benchmark=locomo", "arm=bm25"], tmp_path / "run")
    assert summary["arm_checks"] == {"n_searches": 1986, "n_hits": 19860, "over_top_k": 0, "history_within_top_k": 0,
                                     "duplicate_keys": 0, "unknown_keys": 0, "empty_searches": 0, "textless_hits": 0}
    assert summary["warnings"] == [] and summary["overall_all"]["recall@10"] > 0.5
