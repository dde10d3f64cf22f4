"""Speed of the accuracy axis against a loopback OpenAI server (issue 4's target).

    PYTHONPATH=. MEMRUN_DATA_DIR=... python bench/bench_accuracy.py [--items 500 --repeats 3 --latency 0.1 --concurrency 32]

Starts tests/servers/openai_server.py in its own process, answering every call after
``--latency`` seconds, writes a LoCoMo-format file of ``--items`` questions (50 small
conversations; generated here, no dataset needed), and runs ``memrun.run.execute``
twice with the BM25 arm, an LLM reader and an LLM judge into a fresh call cache:

1. cold: items x repeats reader calls + as many judge calls. Ideal wall time =
   calls x latency / concurrency; target: within 1.15x of it.
2. warm: the identical run again (``--warm`` times); target: zero calls, under 5% of
   the cold run's time. The first re-run and the median of all are printed: on a shared
   machine the same CPU work varies by +-25% from one run to the next.

Times are ``execute()`` (config composed -> Parquet and summary written) in a process
that has imported the modules the run uses (the openai SDK, the BM25 arm's bm25s and
scipy: ~1.3 s that a ``memrun`` process spends once, before any run, and that no run
size changes). Prints each figure beside its peer, as ratios, the CPU time the run used
and, for the cold run, when the first call left and how long the run took after the last.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]


def locomo_file(folder: Path, n_items: int, per_conversation: int = 10) -> Path:
    """A LoCoMo-format file: n_items single-hop questions over small dated conversations."""
    conversations = []
    for c in range(0, n_items, per_conversation):
        turns = [{"speaker": "A" if t % 2 else "B", "dia_id": f"D1:{t + 1}", "text": f"Fact {c}-{t}: item {c + t} is stored in bin {c * 7 + t}."} for t in range(20)]
        qa = [{"question": f"Where is item {c + q} stored?", "answer": f"bin {c * 7 + q}", "evidence": [f"D1:{q + 1}"], "category": 4}
              for q in range(min(per_conversation, n_items - c))]
        conversations.append({"sample_id": f"bench-{c}", "conversation": {"speaker_a": "A", "speaker_b": "B",
                              "session_1_date_time": "1:00 pm on 8 May, 2023", "session_1": turns}, "qa": qa})
    path = folder / "bench-locomo.json"
    path.write_text(json.dumps(conversations))
    return path


def server_calls(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats") as reply:
        return int(json.loads(reply.read())["counts"].get("/v1/chat/completions", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warm", type=int, default=5, help="identical re-runs after the cold one")
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/openai_server.py"), "--latency", str(args.latency)],
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
    os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
    os.environ["OPENAI_API_KEY"] = "sk-bench-loopback-0123456789"
    sys.path.insert(0, str(ROOT))
    import memrun.accuracy.stage  # noqa: F401 - imports before timing (see the module docstring)
    import memrun.arms.bm25  # noqa: F401
    from memrun.commands.calibrate_judge import compose
    from memrun.llm import client
    from memrun.run import execute

    sent: list[float] = []  # when each request left (perf_counter)
    complete = client.ChatClient.complete

    async def timed_complete(self: client.ChatClient, request: client.ChatRequest) -> client.ChatResult:
        sent.append(time.perf_counter())
        try:
            return await complete(self, request)
        finally:
            sent.append(time.perf_counter())

    client.ChatClient.complete = timed_complete  # type: ignore[method-assign]

    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            data = locomo_file(folder, args.items)
            overrides = [
                "axis=accuracy", "benchmark=locomo", f"benchmark.path={data}",
                f"benchmark.sha256={hashlib.sha256(data.read_bytes()).hexdigest()}", "benchmark.expected_counts=null",
                "judge=gpt41", f"repeats={args.repeats}", f"concurrency={args.concurrency}", f"cache_dir={folder / 'cache'}",
                "progress=false",
            ]
            timings = []
            for i in range(1 + args.warm):
                cfg = compose(overrides)
                calls0 = server_calls(port)
                sent.clear()
                cpu0, t0 = time.process_time(), time.perf_counter()
                summary = execute(cfg, folder / f"run{i}", Console(file=io.StringIO()))
                t1 = time.perf_counter()
                edges = (sent[0] - t0, t1 - max(sent)) if sent else (0.0, 0.0)
                timings.append((t1 - t0, time.process_time() - cpu0, server_calls(port) - calls0, summary, edges))
    finally:
        server.kill()

    calls = 2 * args.items * args.repeats
    ideal = calls * args.latency / args.concurrency
    (cold, cold_cpu, cold_calls, _, (first, tail)), warm = timings[0], timings[1:]
    print(f"accuracy axis, {args.items} items x {args.repeats} repeats, loopback server {args.latency * 1000:.0f} ms/call, "
          f"concurrency {args.concurrency}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"cold run   {cold:6.2f} s  vs ideal {ideal:5.2f} s  ({calls} calls x {args.latency} s / {args.concurrency})"
          f"  ratio {cold / ideal:.3f}  (target <= 1.15: {_met(cold / ideal <= 1.15)})  calls at server {cold_calls}"
          f"  cpu {cold_cpu:.2f} s  first call after {first:.2f} s, done {tail:.2f} s after the last")
    if warm:
        second, second_cpu, second_calls, s2, _ = warm[0]
        median = statistics.median(w[0] for w in warm)
        print(f"re-run     {second:6.2f} s  vs cold  {cold:5.2f} s  ratio {second / cold:.3f}"
              f"  (target < 0.05: {_met(second / cold < 0.05)})  calls at server {second_calls}"
              f" (target 0: {_met(second_calls == 0)})  cached {s2['calls']['cached']}  cpu {second_cpu:.2f} s")
        print(f"re-runs    median of {len(warm)}: {median:.2f} s  ratio {median / cold:.3f}"
              f" ({_met(median / cold < 0.05)})  (min {min(w[0] for w in warm):.2f}, max {max(w[0] for w in warm):.2f} s)"
              f"  calls at server {sum(w[2] for w in warm)}")
    bad = [t[3]["n_rows"] for t in timings if t[3]["n_rows"] != args.items * args.repeats]
    if bad:
        print(f"rows: {bad} in some runs (expected {args.items * args.repeats})")


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


if __name__ == "__main__":
    main()
