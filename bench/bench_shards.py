"""One process against four shards on the joblib launcher: the whole LoCoMo accuracy run,
at equal LLM calls in flight.

    MEMRUN_DATA_DIR=... python bench/bench_shards.py [--latency 0.1 --in-flight 64 --pairs 1]

Starts tests/servers/openai_server.py (every call answered after ``--latency`` s), then
runs, as a user does (``memrun`` in a subprocess, imports included), alternating:

* one process: ``memrun benchmark=locomo axis=accuracy judge=gpt4o`` (1,986 items,
  repeats=1: 1,986 reader + 1,986 judge calls) with ``concurrency=IN_FLIGHT``;
* four shards: the same with ``-m hydra/launcher=joblib hydra.launcher.n_jobs=4
  shard.count=4 'shard.index=range(0,4)'`` and ``concurrency=IN_FLIGHT/4`` per process,
  so both sides keep the same number of calls in flight; then ``memrun merge`` of the
  four, timed alone;
* for reference, one process at ``IN_FLIGHT/4``: what a single shard's setting would
  give without sharding.

Sharding pays for itself only where one process cannot keep IN_FLIGHT calls busy (its
event loop, CPU-bound scoring); giving each shard the single process's concurrency
would compare 4x the calls in flight with 1x, which flatters the shards. Each run gets
a fresh call cache, so every call is made. Target (issue 13, restated at equal calls in
flight): four shards <= the single process's wall time; the merge < 1 s. Prints each
shard's item count: 10 conversations cannot split evenly four ways.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def memrun(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Run ``memrun ARGS``; its wall seconds. Exits on failure."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memrun", *args], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"memrun {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--in-flight", type=int, default=64, help="LLM calls in flight on each side (a multiple of 4)")
    parser.add_argument("--pairs", type=int, default=1, help="single/sharded pairs, alternated")
    args = parser.parse_args()
    if not os.environ.get("MEMRUN_DATA_DIR"):
        raise SystemExit("set MEMRUN_DATA_DIR to a folder holding locomo10.json")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/openai_server.py"),
                               "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
           "OPENAI_API_KEY": "sk-bench-loopback-0123456789", "PYTHONPATH": str(ROOT)}
    if args.in_flight % 4:
        raise SystemExit("--in-flight must be a multiple of 4 (four shards share it)")
    common = ["benchmark=locomo", "axis=accuracy", "judge=gpt4o", "repeats=1", "progress=false"]
    whole, per_shard = f"concurrency={args.in_flight}", f"concurrency={args.in_flight // 4}"
    single, sharded, narrow, merges, items = [], [], [], [], {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for p in range(args.pairs):
                single.append(memrun([*common, whole, f"cache_dir={work / f'cache-1-{p}'}",
                                      f"hydra.run.dir={work / 'runs' / f'single-{p}'}"], work, env))
                sweep = work / f"sharded-{p}"
                sharded.append(memrun(["-m", *common, per_shard, f"cache_dir={work / f'cache-4-{p}'}",
                                       "hydra/launcher=joblib", "hydra.launcher.n_jobs=4", "shard.count=4",
                                       "shard.index=range(0,4)", f"hydra.sweep.dir={sweep}"], work, env))
                merges.append(memrun(["merge", str(sweep)], work, env))
                narrow.append(memrun([*common, per_shard, f"cache_dir={work / f'cache-n-{p}'}",
                                      f"hydra.run.dir={work / 'runs' / f'narrow-{p}'}"], work, env))
                summary = json.loads((sweep / "summary.json").read_text())
                items = summary["shards"]["items"]
    finally:
        server.terminate()
    ideal = 2 * 1986 * args.latency / args.in_flight
    s1, s4, sn, m = (statistics.median(x) for x in (single, sharded, narrow, merges))
    print(f"LoCoMo accuracy, 1,986 items x 1 repeat, 3,972 calls at {1000 * args.latency:.0f} ms, "
          f"{args.in_flight} calls in flight on each side (ideal {ideal:.1f} s)")
    print(f"  one process, concurrency {args.in_flight:<4}      {s1:7.2f} s")
    print(f"  4 shards (joblib), {args.in_flight // 4} each      {s4:7.2f} s   ratio to one process {s4 / s1:.2f}"
          f"   (target <= 1.00 at equal calls in flight: {'met' if s4 <= s1 else 'MISSED'})")
    print(f"  one process, concurrency {args.in_flight // 4:<4}      {sn:7.2f} s   (a shard's setting alone; "
          f"sharding at it gives {sn / s4:.2f}x)")
    print(f"  memrun merge                    {m:7.2f} s whole process   (target < 1 s: {'met' if m < 1 else 'MISSED'})")
    print(f"  items per shard      {', '.join(f'{i}: {n}' for i, n in items.items())}")
    print("  runs s: single", ", ".join(f"{x:.1f}" for x in single), "| sharded", ", ".join(f"{x:.1f}" for x in sharded),
          "| single at a shard's concurrency", ", ".join(f"{x:.1f}" for x in narrow))


if __name__ == "__main__":
    main()
