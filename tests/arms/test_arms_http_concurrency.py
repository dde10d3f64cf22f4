"""arm=http with many histories and searches in flight (arm.concurrency), against the loopback
reference memory server: same rows as one call at a time, 429s that hold every request,
faults that stay on their history. The interrupted concurrent run is in test_arms_http.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arms.support import run_in_process
from memrun.io.reader import read_run

LATENCY = ("search_latency_ms", "search_queue_ms", "run_id")


def run(url: str, tmp_path: Path, name: str, *overrides: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / name
    summary = run_in_process(["benchmark=synthetic", "arm=http", f"arm.base_url={url}",
                              f"arm.ledger_dir={tmp_path / 'ledger'}", *overrides], out)
    return summary, read_run(out).table.to_pylist()


def without_latency(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in LATENCY} for r in rows]


def test_concurrent_rows_equal_sequential_rows_row_for_row(memory, tmp_path) -> None:
    state, url = memory
    state.search_delay_s = 0.02
    one_summary, one = run(url, tmp_path, "one", "arm.concurrency=1")
    order = list(state.requests)
    assert order[1:5] == ["create", "ingest", "search", "search"]  # one history after another, as always
    many_summary, many = run(url, tmp_path, "many", "arm.concurrency=16")
    assert without_latency(many) == without_latency(one) and len(one) == 30
    assert [r["item_id"] for r in many] == [r["item_id"] for r in one]  # the dataset's order
    drop = ("run_id", "search_latency_ms", "pipeline_seconds", "items_sha256")
    assert {k: v for k, v in many_summary.items() if k not in drop} == {
        k: v for k, v in one_summary.items() if k not in drop}
    assert all(r["search_queue_ms"] is not None and r["search_latency_ms"] >= 15 for r in many + one)
    assert state.namespaces == {}


def test_histories_and_searches_are_in_flight_together(memory, tmp_path) -> None:
    state, url = memory
    state.search_delay_s = 1.0
    run(url, tmp_path, "run", "arm.concurrency=16")
    assert len([op for op, _ in state.arrivals if op == "search"]) == 30
    # 30 searches of 1 s each, six per history, counted inside the server while they sleep:
    # one at a time gives 1, one history at a time at most 6; at least 8 means a history's
    # searches are in flight together and beside another history's. A loaded machine may
    # start the histories' searches apart, but not a whole second apart.
    assert state.search_peak >= 8, state.search_peak
    assert state.requests.count("create") == 5 and state.namespaces == {}


def test_a_429_storm_holds_every_request_in_flight_and_loses_none(memory, tmp_path) -> None:
    state, url = memory
    state.search_delay_s = 0.3
    state.retry_after = "2"
    state.fail["search"] = [429, 429, 429]
    _, rows = run(url, tmp_path, "run", "arm.concurrency=8")
    assert not any(r["error"] for r in rows) and len(rows) == 30  # every search answered in the end
    first_429 = [t for op, t in state.arrivals if op == "search"][0]
    # After the first 429 (answered at once) the server said wait 2 s: what was already sent
    # arrives at once (within 0.8 s on a loaded machine), then nothing until the wait is over,
    # for every request, not only the refused ones. Were only those held, the other searches
    # (0.3 s each, five slots) would keep arriving for about 1.5 s.
    late = [t - first_429 for op, t in state.arrivals if op == "search" and t > first_429]
    assert not [d for d in late if 0.8 < d < 1.95], late
    assert sum(r["search_queue_ms"] >= 1900 for r in rows) >= 3  # the wait is queue time, not latency


def test_a_failing_history_errors_only_its_own_items(memory, tmp_path) -> None:
    state, url = memory
    state.failing_namespaces = ["-03-travel"]  # every request to it fails, ingest first
    _, rows = run(url, tmp_path, "run", "arm.concurrency=16", "arm.attempts=2", "max_error_share=1")
    failed = {r["item_id"] for r in rows if r["error"]}
    assert failed and all(i.startswith("03-travel") for i in failed)
    assert all(r["error"].startswith("ingest: HTTPStatusError: HTTP 500") for r in rows if r["error"])
    assert sum(1 for r in rows if r["error"]) == 6 and len(rows) == 30
    assert all("-03-travel" in n for n in state.namespaces)  # the others erased (its erase fails too)


def test_max_rps_caps_the_rate(memory, tmp_path) -> None:
    state, url = memory
    run(url, tmp_path, "run", "arm.concurrency=16", "arm.max_rps=40")
    times = sorted(t for _, t in state.arrivals[1:])  # after the health check
    assert len(times) >= 45
    assert times[-1] - times[0] >= (len(times) - 1) / 40 * 0.9  # 40 per second at most
