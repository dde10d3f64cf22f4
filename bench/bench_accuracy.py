"""The LLM-bound loop as whole processes: memrun's accuracy run, a plain asyncio client, the ideal.

    python bench/bench_accuracy.py [--calls 12000] [--concurrency 32 128] [--latency 0.1] [--pairs 3]

Starts tests/servers/openai_server.py in its own process (every call answered after
``--latency`` s, with replies that vary per prompt: ``--replies varied``) and writes a
LoCoMo-format file of ``calls / (2 x repeats)`` questions (small conversations, generated
here). Then, per concurrency, alternating in pairs, each
in a fresh subprocess timed from start to exit (imports included):

* memrun cold: ``python -m memrun axis=accuracy benchmark=locomo benchmark.path=... judge=gpt41
  repeats=3 concurrency=C`` into an empty call cache (items x repeats reader calls + as
  many judge calls);
* peer: a plain asyncio HTTP/1.1 client (keep-alive, C connections, no memrun, no SDK)
  making the same number of calls to the same server;
* memrun re-run: the identical memrun command again over the warm cache (0 calls).

memrun's calls run on uvloop's event loop; the CPU row's peer is the plain aiohttp client on
asyncio's own loop (what a plain script uses), and the line also shows the same client on
uvloop, so the share of the gap the loop closes can be read off.

The aiohttp peer of the CPU row sends the very request bodies memrun's first cold run sent
(fetched from the server, ``GET /_bodies``: the reader prompts, then the judge prompts
quoting the replies), so both sides encode, send and parse the same bytes; the line also
shows the same peer with one-line prompts (the figure reported before, which sent ~40-byte
prompts against memrun's ~1.5 kB).

Ideal = calls x latency / C. Targets (issue 15, target 2): memrun cold <= 1.15x ideal at
concurrency 32 and <= 1.25x at 128; re-run < 10% of the cold run; the server alone
(the plain client at 8x the concurrency) must exceed 3x the target call rate. Issue 37:
CPU per call (user + system seconds of the whole process / calls) <= 1.5x a plain aiohttp
client's (one ClientSession, C connections, the same calls; run after the raw client in each pair).
A second line splits each side's CPU into its fixed work (memrun: the re-run, which loads,
retrieves, writes and summarises the same items with no call; the client: the same script
making no call) and the rest, per call: the share of the gap that is per call, not fixed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import ROOT, Child, run_child  # noqa: E402

PEER = r'''
import asyncio, json, sys, time
port, calls, conc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

async def worker(todo):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while todo:
        i = todo.pop()
        body = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": f"Question {i}: where?"}],
                           "temperature": 0}).encode()
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        reply = json.loads(await reader.readexactly(length))
        reply["choices"][0]["message"]["content"]
    writer.close()

async def main():
    todo = list(range(calls))
    await asyncio.gather(*(worker(todo) for _ in range(conc)))

t0 = time.perf_counter()
asyncio.run(main())
print(f"RATE {calls / (time.perf_counter() - t0):.0f}")
'''

AIOHTTP_PEER = r'''
import asyncio, json, sys, time
import aiohttp
port, calls, conc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
bodies = open(sys.argv[4]).read().splitlines() if len(sys.argv) > 4 and sys.argv[4] != "-" else None  # JSON lines
on_uvloop = len(sys.argv) > 5 and sys.argv[5] == "uvloop"  # the event loop memrun's calls run on

async def main():
    todo = list(range(calls))
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc),
                                     headers={"Authorization": "Bearer sk-x"}) as session:
        async def worker():
            while todo:
                i = todo.pop()
                if bodies is not None:  # the request memrun sent, read as a script reads its data
                    body = json.loads(bodies[i % len(bodies)])
                else:
                    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"Question {i}: where?"}],
                            "temperature": 0}
                async with session.post(url, json=body) as reply:
                    (await reply.json())["choices"][0]["message"]["content"]
        await asyncio.gather(*(worker() for _ in range(conc)))

t0 = time.perf_counter()
if on_uvloop:
    import uvloop
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())
else:
    asyncio.run(main())
print(f"RATE {calls / (time.perf_counter() - t0):.0f}")
'''


def locomo_file(folder: Path, n_items: int, per_conversation: int = 10) -> Path:
    """A LoCoMo-format file: n_items single-hop questions over small dated conversations."""
    conversations = []
    for c in range(0, n_items, per_conversation):
        turns = [{"speaker": "A" if t % 2 else "B", "dia_id": f"D1:{t + 1}",
                  "text": f"Fact {c}-{t}: item {c + t} is stored in bin {c * 7 + t}."} for t in range(20)]
        qa = [{"question": f"Where is item {c + q} stored?", "answer": f"bin {c * 7 + q}",
               "evidence": [f"D1:{q + 1}"], "category": 4} for q in range(min(per_conversation, n_items - c))]
        conversations.append({"sample_id": f"bench-{c}", "conversation": {
            "speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:00 pm on 8 May, 2023", "session_1": turns},
            "qa": qa})
    path = folder / "bench-locomo.json"
    path.write_text(json.dumps(conversations))
    return path


def server_calls(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats") as reply:
        return int(json.loads(reply.read())["counts"].get("/v1/chat/completions", 0))


def server_bodies(port: int, start: int, stop: int) -> list[dict]:
    """The bodies of the server's chat requests start..stop-1 (in arrival order)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_bodies?from={start}&to={stop}") as reply:
        return json.loads(reply.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=12_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    items = args.calls // (2 * args.repeats)
    calls = 2 * items * args.repeats
    # Replies vary per prompt (a pure function of it, as at temperature 0), so no per-text memo
    # of memrun's is credited with reuse a real model's replies lack.
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/openai_server.py"), "--latency", str(args.latency),
                               "--replies", "varied"],
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "sk-bench-loopback-0123456789"}
    lines = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            data = locomo_file(folder, items)
            peer = folder / "peer.py"
            peer.write_text(PEER)
            aio = folder / "aiohttp_peer.py"
            aio.write_text(AIOHTTP_PEER)
            # The server alone: the plain client at 8x the largest concurrency.
            top = max(args.concurrency)
            alone = run_child([str(peer), str(port), str(calls), str(8 * top)])
            alone_rate = float(alone.stdout.split()[-1])
            target_rate = top / args.latency
            lines.append(f"server alone: {alone_rate:,.0f} calls/s with {8 * top} in flight; target rate at "
                         f"concurrency {top}: {target_rate:,.0f}/s; ratio {alone_rate / target_rate:.2f} "
                         f"(> 3: {'met' if alone_rate > 3 * target_rate else 'MISSED'})")
            runs = 0

            def memrun(conc: int, cache: Path) -> tuple[Child, int]:
                nonlocal runs
                runs += 1
                before = server_calls(port)
                child = run_child([
                    "memrun", "axis=accuracy", "benchmark=locomo", f"benchmark.path={data}",
                    f"benchmark.sha256={hashlib.sha256(data.read_bytes()).hexdigest()}", "benchmark.expected_counts=null",
                    "judge=gpt41", f"repeats={args.repeats}", f"concurrency={conc}", f"cache_dir={cache}",
                    # runs/ keeps the folders a run looks through for an unfinished run of its configuration
                    # (its own and its parent's siblings) inside this bench's folder: in the temp dir itself,
                    # a cold run resumed another process's interrupted run of the same file instead of calling.
                    "progress=false", f"hydra.run.dir={folder / 'runs' / f'run{runs}'}",
                ], cwd=folder, env=env)
                return child, server_calls(port) - before

            # Untimed, 10 items: the modules' bytecode, compiled once after a code change (as pip
            # compiles an installed package's), is not counted in the first timed run.
            run_child(["memrun", "axis=accuracy", "benchmark=locomo", f"benchmark.path={data}", "benchmark.limit=10",
                       "benchmark.sha256=null", "benchmark.expected_counts=null", "judge=gpt41", "repeats=1", f"cache_dir={folder / 'cache-warm-up'}",
                       "progress=false", f"hydra.run.dir={folder / 'runs' / 'warm-up'}"], cwd=folder, env=env)
            for conc in args.concurrency:
                ideal = calls * args.latency / conc
                cold, peer_runs, warm, counts, aio_runs, tiny_runs, uv_runs = [], [], [], [], [], [], []
                aio_idle = []  # the aiohttp client making no call: its start-up, reading the bodies, exit
                bodies = folder / f"bodies-{conc}.jsonl"
                for p in range(args.pairs):
                    cache = folder / f"cache-{conc}-{p}"
                    before = server_calls(port)
                    c, n = memrun(conc, cache)
                    cold.append(c)
                    counts.append(n)
                    if p == 0:  # what memrun sent, for the peer to send
                        bodies.write_text("".join(json.dumps(b) + "\n" for b in server_bodies(port, before, before + n)))
                    peer_runs.append(run_child([str(peer), str(port), str(calls), str(conc)]))
                    aio_runs.append(run_child([str(aio), str(port), str(calls), str(conc), str(bodies)]))
                    tiny_runs.append(run_child([str(aio), str(port), str(calls), str(conc)]))
                    uv_runs.append(run_child([str(aio), str(port), str(calls), str(conc), str(bodies), "uvloop"]))
                    aio_idle.append(run_child([str(aio), str(port), "0", str(conc), str(bodies)]))
                    w, n_warm = memrun(conc, cache)
                    warm.append(w)
                    counts.append(n_warm)
                med = statistics.median
                m_cold = med([c.seconds for c in cold])
                m_peer = med([c.seconds for c in peer_runs])
                ratio_warm = med([w.seconds / c.seconds for w, c in zip(warm, cold)])
                target = 1.15 if conc <= 32 else 1.25
                lines.append(
                    f"concurrency {conc}: {calls} calls x {args.latency * 1000:.0f} ms, ideal {ideal:.2f} s | "
                    f"memrun cold {m_cold:.2f} s = {m_cold / ideal:.3f}x ideal (<= {target}: "
                    f"{'met' if m_cold / ideal <= target else 'MISSED'}) | plain asyncio {m_peer:.2f} s = "
                    f"{m_peer / ideal:.3f}x | memrun / peer {med([c.seconds / q.seconds for c, q in zip(cold, peer_runs)]):.2f}"
                    f" | re-run {med([w.seconds for w in warm]):.2f} s = {ratio_warm:.3f} of cold (< 0.10: "
                    f"{'met' if ratio_warm < 0.10 else 'MISSED'}) | calls at server (cold, re-run)... {counts} "
                    f"| peak RSS {max(c.peak_mib for c in cold):.0f} MiB")
                cpu_ratio = med([c.cpu_seconds / q.cpu_seconds for c, q in zip(cold, aio_runs)])
                lines.append(
                    f"  CPU per call at concurrency {conc}: memrun cold {med([c.cpu_seconds for c in cold]) / calls * 1e3:.3f}"
                    f" ms, plain aiohttp client {med([q.cpu_seconds for q in aio_runs]) / calls * 1e3:.3f} ms, "
                    f"{cpu_ratio:.2f}x (<= 1.5x: {'met' if cpu_ratio <= 1.5 else 'MISSED'}; the same request bodies; "
                    f"memrun's includes its start-up and exit); the aiohttp client with one-line prompts "
                    f"{med([q.cpu_seconds for q in tiny_runs]) / calls * 1e3:.3f} ms "
                    f"({med([c.cpu_seconds / q.cpu_seconds for c, q in zip(cold, tiny_runs)]):.2f}x); "
                    f"raw asyncio client {med([q.cpu_seconds for q in peer_runs]) / calls * 1e3:.3f} ms; "
                    f"the aiohttp client on uvloop, as memrun's calls run, the same bodies "
                    f"{med([q.cpu_seconds for q in uv_runs]) / calls * 1e3:.3f} ms "
                    f"({med([c.cpu_seconds / q.cpu_seconds for c, q in zip(cold, uv_runs)]):.2f}x)")
                # Each side's CPU beyond what it spends with no call: memrun's cold run less its re-run
                # (which loads, retrieves, writes and summarises the same items), the client less its idle run.
                own = [(c.cpu_seconds - w.cpu_seconds) / calls * 1e3 for c, w in zip(cold, warm)]
                theirs = [(q.cpu_seconds - i.cpu_seconds) / calls * 1e3 for q, i in zip(aio_runs, aio_idle)]
                lines.append(
                    f"  CPU per call beyond each side's fixed work (no goal; read beside the line above): memrun "
                    f"(cold - re-run) {med(own):.3f} ms, aiohttp client (calls - no call) {med(theirs):.3f} ms, "
                    f"{med([o / t for o, t in zip(own, theirs)]):.2f}x; memrun's fixed work (its re-run) "
                    f"{med([w.cpu_seconds for w in warm]):.2f} s, the client's {med([i.cpu_seconds for i in aio_idle]):.2f} s. "
                    f"The re-run also reads every reply from the cache, which the cold run does not: "
                    f"memrun's share here is under-counted by that read")
    finally:
        server.kill()
    print(f"accuracy axis, whole processes, {args.pairs} pairs (memrun cold, plain client, memrun re-run)")
    print("\n".join(lines))
    print(f"(load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
