"""What the answer stage works out once per item and shares among its repeats."""

from __future__ import annotations

from collections import Counter

from accuracy.helpers import execute_run, rows
from memrun.accuracy import stage
from servers.openai_server import varied_responder


def test_an_items_repeats_share_its_failure_stage_and_its_judge_case(llm_env, tmp_path, monkeypatch):
    """Repeats that answered alike (the server's replies are a function of the prompt, as at
    temperature 0) are graded from one judge case, in a cold run and in a re-run, and a missed item's failure stage is
    found once: it reads the item, its hits and their records, never the answer."""
    llm_env.responder = varied_responder  # verdicts vary per answer: some items are missed
    found: Counter[str] = Counter()
    real_failure_stage = stage.failure_stage

    def counted(**kwargs):
        found[kwargs["gold"]] += 1
        return real_failure_stage(**kwargs)

    monkeypatch.setattr(stage, "failure_stage", counted)
    cases: list[str] = []
    real_judge_case = stage.judge_case
    monkeypatch.setattr(stage, "judge_case", lambda item, *a: cases.append(item.item_id) or real_judge_case(item, *a))
    cold, _ = execute_run(tmp_path, "judge=gpt41", "repeats=3", name="cold")
    assert sorted(cases) == sorted({r["item_id"] for r in rows(cold)})  # the calls made: one case per item too
    found.clear()
    cases.clear()
    out, _ = execute_run(tmp_path, "judge=gpt41", "repeats=3", name="warm")  # every reply read ahead
    table = rows(out)
    missed = [r for r in table if r["failure_stage"] is not None]
    assert missed and len({r["item_id"] for r in missed}) < len(missed)  # an item missed in several repeats
    by_item: dict[str, set[str]] = {}
    for r in missed:
        by_item.setdefault(r["item_id"], set()).add(r["failure_stage"])
    assert all(len(stages) == 1 for stages in by_item.values())
    assert sum(found.values()) == len(by_item)  # once per missed item, not per missed row
    assert sorted(cases) == sorted({r["item_id"] for r in table})  # one judge case per item (answers alike)


def test_a_cached_rerun_freezes_what_each_group_left_alive(llm_env, tmp_path, monkeypatch):
    """While no call is in flight (a re-run answered from the cache), what each group left
    alive (its rows above all) is frozen out of the cyclic collector's sight, and the stage
    unfreezes everything at its end."""
    import gc

    from memrun.pipeline import item_stages

    seen: list[int] = []
    real_emit = item_stages.RowSink.emit
    monkeypatch.setattr(item_stages.RowSink, "emit", lambda self, row: seen.append(gc.get_freeze_count()) or real_emit(self, row))
    execute_run(tmp_path, "judge=gpt41", "repeats=3", name="cold")
    seen.clear()
    out, _ = execute_run(tmp_path, "judge=gpt41", "repeats=3", name="warm")
    table = rows(out)
    assert len({r["cluster"] for r in table}) > 2
    # the last group's rows see the earlier groups' rows frozen (a dict each, and its lists)
    assert seen[-1] - seen[0] >= len(table) // 2
    assert gc.get_freeze_count() == 0  # unfrozen at the stage's end


def test_a_cached_rerun_reads_several_groups_ahead_in_one_query(llm_env, tmp_path, monkeypatch):
    """Once a group's rows all finished from the cache, the next groups are taken together,
    up to the room there is (concurrency item x repeats), and their replies are read in one
    query each for the reader and the judge; the rows are those, in the order, that one
    group at a time gives. A cold run takes one group at a time (its first group's calls
    are not delayed by the retrieval of the next ones)."""
    from memrun.llm.service import LLMService

    llm_env.responder = varied_responder
    queries: list[int] = []  # calls read ahead, per query
    real_prefetch = LLMService.prefetch

    def prefetch(self, endpoint, calls):
        calls = list(calls)
        queries.append(len(calls))
        return real_prefetch(self, endpoint, calls)

    monkeypatch.setattr(LLMService, "prefetch", prefetch)
    taken: list[int] = []
    real_take = stage.AnswerStage._take

    async def take(self, groups, room):
        taken.append(room)
        return await real_take(self, groups, room)

    monkeypatch.setattr(stage.AnswerStage, "_take", take)
    execute_run(tmp_path, "judge=gpt41", "repeats=3", "concurrency=64", name="cold")
    assert set(taken) == {1}  # every group's calls were made: one group at a time
    taken.clear()
    queries.clear()
    warm, _ = execute_run(tmp_path, "judge=gpt41", "repeats=3", "concurrency=64", name="warm")
    assert taken[0] == 1 and set(taken[1:]) == {64}
    batched = len(queries)
    assert max(queries) > queries[0], queries  # the first query: one group; then several in one

    async def one_at_a_time(self, groups, room):
        return await real_take(self, groups, 1)

    monkeypatch.setattr(stage.AnswerStage, "_take", one_at_a_time)
    queries.clear()
    single, _ = execute_run(tmp_path, "judge=gpt41", "repeats=3", "concurrency=64", name="single")
    assert batched < len(queries)
    volatile = ("run_id", "search_latency_ms")
    assert [{k: v for k, v in r.items() if k not in volatile} for r in rows(warm)] == [
        {k: v for k, v in r.items() if k not in volatile} for r in rows(single)]
