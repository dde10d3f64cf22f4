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
