"""User arms that allow concurrent calls: an async arm and a thread-safe synchronous arm both
run with many calls in flight, and give the rows of a one-call-at-a-time run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arms import concurrent
from arms.support import run_in_process
from memrun.errors import ArmError, ConfigError
from memrun.io.reader import read_run

LATENCY = ("search_latency_ms", "search_queue_ms", "run_id")


def rows(tmp_path: Path, name: str, *overrides: str) -> list[dict[str, Any]]:
    run_in_process(["benchmark=synthetic", "arm=bm25", *overrides], tmp_path / name)
    return [{k: v for k, v in r.items() if k not in LATENCY} for r in read_run(tmp_path / name).table.to_pylist()]


@pytest.mark.parametrize("arm", ["AsyncArm", "ThreadSafeArm"])
def test_a_concurrent_user_arm_runs_calls_together_with_the_same_rows(tmp_path, arm) -> None:
    target = f"arm._target_=arms.concurrent.{arm}"
    concurrent._Counted.peak = 0
    one = rows(tmp_path, "one", target, "arm.concurrency=1")
    assert concurrent._Counted.peak == 1
    many = rows(tmp_path, "many", target, "arm.concurrency=8")
    assert concurrent._Counted.peak > 1  # searches of a history, and histories, in flight together
    plain = rows(tmp_path, "plain", "arm.concurrency=8")  # BM25Arm itself: sequential
    assert many == one == plain and len(one) == 30


def test_a_concurrent_arm_whose_search_takes_no_history_is_refused(tmp_path) -> None:
    with pytest.raises(ArmError, match=r"NoHistoryAsyncArm is async.*search\(self, query, k, history_id\)"):
        run_in_process(["benchmark=synthetic", "arm=bm25", "arm._target_=arms.concurrent.NoHistoryAsyncArm"],
                       tmp_path / "run")


@pytest.mark.parametrize("value", ["0", "two", "1.5"])
def test_a_bad_concurrency_names_the_key(tmp_path, value) -> None:
    with pytest.raises((ConfigError, Exception), match=r"concurrency"):
        run_in_process(["benchmark=synthetic", "arm=bm25", f"arm.concurrency={value}"], tmp_path / "run")


def test_warmup_searches_each_query_twice(tmp_path) -> None:
    concurrent._Counted.peak = 0
    warm = rows(tmp_path, "warm", "arm._target_=arms.concurrent.AsyncArm", "arm.warmup=true")
    cold = rows(tmp_path, "cold", "arm._target_=arms.concurrent.AsyncArm")
    assert warm == cold


def test_a_slow_history_does_not_hold_back_the_ones_after_it() -> None:
    """Histories after a slow one start as soon as places free up (not when the slow one
    ends); their results still come out in dataset order."""
    import asyncio
    import time

    from memrun.pipeline.many_histories import Flow, FlowSettings
    from memrun.records import Group, Hit, Item, Record

    class Arm:
        def __init__(self) -> None:
            self.started: dict[str, float] = {}
            self.slow_done = float("inf")

        async def ingest(self, history_id: str, records: Any) -> None:
            self.started[history_id] = time.perf_counter()
            await asyncio.sleep(0.6 if history_id == "h0" else 0.01)
            if history_id == "h0":
                self.slow_done = time.perf_counter()

        async def search(self, query: str, k: int, history_id: str | None = None) -> list[Hit]:
            return [Hit(key=f"{history_id}-r", score=1.0)]

    def group(i: int) -> Group:
        item = Item(item_id=f"q{i}", history_id=f"h{i}", cluster=f"h{i}", category="1", question="q",
                    answer=None, answer_raw="null", gold_keys=(f"h{i}-r",))
        return Group(history_id=f"h{i}", records=[Record(key=f"h{i}-r", text="t")], items=[item])

    arm = Arm()
    flow = Flow(arm, top_k=1, gold_match="key", settings=FlowSettings(concurrency=2))

    async def main() -> list[str]:
        return [g.history_id async for g, _ in flow.groups([group(i) for i in range(8)])]

    assert asyncio.run(main()) == [f"h{i}" for i in range(8)]
    # two open at once, up to four waiting to be handed on: h1, h2 and h3 ran while h0 was slow
    early = sorted(h for h, t in arm.started.items() if t < arm.slow_done)
    assert early == ["h0", "h1", "h2", "h3"]
