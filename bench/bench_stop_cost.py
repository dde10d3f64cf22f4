"""What a stop costs in repeated calls: SIGTERM at seeded random points of a concurrent
``arm=http`` run, then the same command again (it resumes), against the loopback memory
server (``tests/servers/memory_server.py``, in this process, every search taking
``--search-ms``).

For each trial it prints, side by side, what the stop cost (the ingest requests and
searches the interrupted run and its rerun sent beyond what one uninterrupted run sends)
and the goal's bound: the searches in flight at the signal (held by the server at that
moment) plus the re-ingest of the histories that were open (those with items left without
a row when the run stopped, counted from its rows; their ingest requests are what the
rerun sends). Whole processes, as a user runs them.

    MEMRUN_DATA_DIR=... python bench/bench_stop_cost.py [--benchmark locomo|synthetic] [--trials 8] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import pyarrow.parquet as pq  # noqa: E402

from servers import memory_server  # noqa: E402

MEMRUN = [sys.executable, "-m", "memrun"]


def _counts(state: memory_server.MemoryState) -> tuple[int, int]:
    with state.lock:
        return state.requests.count("ingest"), state.requests.count("search")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([*MEMRUN, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="locomo")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--search-ms", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    state = memory_server.MemoryState(search_delay_s=args.search_ms / 1000)
    server = memory_server.serve(state)
    base = [f"benchmark={args.benchmark}", "arm=http", f"arm.base_url=http://127.0.0.1:{server.server_address[1]}",
            f"arm.concurrency={args.concurrency}", "progress=false"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "PYTHONPATH": str(ROOT)}
        full = _run([*base, f"hydra.run.dir={work / 'runs' / 'full'}"], work, env)
        started = time.monotonic()
        _, err = full.communicate()
        assert full.returncode == 0, err
        whole = time.monotonic() - started
        ingests, searches = _counts(state)
        clusters = pq.read_table(work / "runs" / "full" / "items.parquet", columns=["cluster"]).column("cluster").to_pylist()
        per_history = {c: clusters.count(c) for c in set(clusters)}
        print(f"one uninterrupted run: {ingests} ingest requests, {searches} searches, {whole:.1f} s "
              f"({args.benchmark}, arm.concurrency {args.concurrency}, {args.search_ms:g} ms a search)")
        print(f"{'trial':>5} {'signal s':>8} {'rows kept':>9} {'extra searches':>14} {'in flight':>9} "
              f"{'extra ingests':>13} {'open histories':>14} {'their ingests':>13} {'within goal':>11}")
        within = stops = 0
        for trial in range(args.trials):
            state.requests.clear()
            state.arrivals.clear()
            run = work / "runs" / f"t{trial}"
            proc = _run([*base, f"hydra.run.dir={run}"], work, env)
            while not _counts(state)[1] and proc.poll() is None:
                time.sleep(0.005)
            delay = rng.uniform(0.0, max(whole - 2.5, 0.5))  # start-up before the first search: ~2 s
            time.sleep(delay)
            with state.lock:
                in_flight = state.sleeping  # searches the server holds at the signal
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate()
            assert proc.returncode in (0, 130), err
            if proc.returncode == 0:
                print(f"{trial:>5} {delay:>8.2f}  the run had finished before the signal: no stop to measure")
                continue
            stopped_ingests, stopped_searches = _counts(state)
            creates_before = state.requests.count("create")
            again = _run([*base, f"hydra.run.dir={work / 'runs' / f't{trial}-again'}"], work, env)
            _, err = again.communicate()
            assert again.returncode == 0, err
            total_ingests, total_searches = _counts(state)
            kept_rows = pq.read_table(run / "items.parquet", columns=["cluster"]).column("cluster").to_pylist()
            kept = len(kept_rows)
            open_histories = sum(1 for c, n in per_history.items() if kept_rows.count(c) < n)
            rerun_ingests = total_ingests - stopped_ingests
            extra_s, extra_i = total_searches - searches, total_ingests - ingests
            rerun_histories = state.requests.count("create") - creates_before  # histories the rerun ingested
            ok = extra_s <= in_flight and extra_i <= rerun_ingests and rerun_histories == open_histories
            within += ok
            stops += 1
            print(f"{trial:>5} {delay:>8.2f} {kept:>9} {extra_s:>14} {in_flight:>9} {extra_i:>13} "
                  f"{open_histories:>14} {rerun_ingests:>13} {'yes' if ok else 'NO':>11}")
        print(f"within the goal (extra searches <= in flight at the signal; the rerun ingests exactly the open "
              f"histories, and nothing else is sent again): {within} of {stops} stops")
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
