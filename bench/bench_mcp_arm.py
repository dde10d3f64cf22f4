"""arm=mcp against a plain ``mcp`` SDK client: the cost per call, and wall time with calls in flight.

Both sides talk to the tests' MCP server (tests/servers/mcp_server.py over stdio, one
server process per side, started before the clock) and run as alternated pairs of fresh
processes (bench/_pairs.py); each child times its own work and prints it, so server
start-up and imports are left out of both sides alike.

* per call: ``--calls`` searches one after another in one namespace of 200 records
  (server answers at once). memrun: ``await McpArm.search(...)``, as the retrieval flow
  awaits it (arguments rendered from templates, checked against the tool's inputSchema,
  result mapped by JMESPath into hits); peer: ``await session.call_tool("search", ...)``
  and the hits read from its structured content. Goal: <= 1.2x.
* in flight: ``--histories`` histories of 50 records and ``--questions`` questions each,
  every tool call taking ``--slow-ms`` in the server (``MCP_TEST_SLOW_S``), at
  ``arm.concurrency`` 1 and 16. memrun: the retrieval flow (memrun.pipeline.many_histories.Flow:
  per history ingest, every search at once, release = erase); peer: a plain asyncio
  script making the same calls over one session with the same number in flight (an
  ``asyncio.Semaphore``). The ideal is the server's time alone: calls x slow / C, or a
  history's chain ingest -> search -> erase (3 x slow) where that is longer. Goal at 16:
  <= 1.25x the ideal.
  The test server is one Python process whose own CPU per call (the SDK's server side,
  ~1-3 ms) adds up, at 16 in flight, to about the ideal itself, so both sides stay above
  it; the last row gives both two server processes (``arm.sessions=2``; the peer opens
  two sessions and hands histories out round robin, as the arm does).

    nice -n 10 python bench/bench_mcp_arm.py [--pairs 5] [--calls 200] [--slow-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "mcp_server.py"
WORDS = "cat tuna grey bicycle lisbon cello sunday garden river piano".split()


def workload(histories: int, records: int, questions: int) -> list[dict]:
    """Histories as plain data (both sides read the same): id, records [{id, text}], questions."""
    return [{"id": f"h{h}",
             "records": [{"id": f"D{h}:{i}", "text": f"record {i} about {WORDS[(i + h) % 10]} and {WORDS[(i * 3) % 10]}"}
                         for i in range(records)],
             "questions": [f"what about the {WORDS[(q + h) % 10]}" for q in range(questions)]}
            for h in range(histories)]


# -- the peer: a plain SDK client (no memrun import) ---------------------------------------

async def plain(args: argparse.Namespace) -> float:
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {"MCP_TEST_SLOW_S": str(args.slow_ms / 1000)} if args.mode == "flight" else {}
    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(args.sessions):  # one server process each, as arm.sessions over stdio
            read, write = await stack.enter_async_context(
                stdio_client(StdioServerParameters(command=sys.executable, args=[str(SERVER)], env=env)))
            sessions.append(await stack.enter_async_context(ClientSession(read, write)))
            await sessions[-1].initialize()
        session = sessions[0]

        async def search(session, namespace: str, query: str) -> list:
            result = await session.call_tool("search", {"namespace": namespace, "query": query, "k": 10})
            return (result.structured_content or json.loads(result.content[0].text))["hits"]

        if args.mode == "calls":
            (history,) = workload(1, 200, 50)
            await session.call_tool("store", {"namespace": "plain", "records": history["records"]})
            for q in history["questions"][:10]:
                await search(session, "plain", q)  # warm
            start = time.perf_counter()
            for i in range(args.calls):
                await search(session, "plain", history["questions"][i % 50])
            return (time.perf_counter() - start) / args.calls
        slots = asyncio.Semaphore(args.concurrency)

        async def call(coro_fn, *a):
            async with slots:
                return await coro_fn(*a)

        async def one(history: dict, session) -> None:
            name = f"plain-{history['id']}"
            await call(session.call_tool, "store", {"namespace": name, "records": history["records"]})
            await asyncio.gather(*(call(search, session, name, q) for q in history["questions"]))
            await call(session.call_tool, "erase", {"namespace": name})

        start = time.perf_counter()
        await asyncio.gather(*(one(h, sessions[i % len(sessions)])  # round robin, as arm.sessions hands them out
                               for i, h in enumerate(workload(args.histories, 50, args.questions))))
        return time.perf_counter() - start


# -- memrun: arm=mcp as the run drives it --------------------------------------------------

def memrun_arm(ledger: str, slow_s: float, sessions: int = 1):
    from memrun.arms.mcp import McpArm

    ns = "{{ namespace }}"
    return McpArm(command=sys.executable, args=[str(SERVER)], ledger_dir=ledger, start_timeout_s=120, sessions=sessions,
                  env={"MCP_TEST_SLOW_S": str(slow_s)} if slow_s else {},
                  ingest={"tool": "store", "record": {"id": "{{ record.key }}", "text": "{{ record.text }}"},
                          "arguments": {"namespace": ns, "records": "{{ records }}"}},
                  search={"tool": "search", "arguments": {"namespace": ns, "query": "{{ query }}", "k": "{{ k }}"},
                          "result": "hits[].{key: id, score: score, text: text}"},
                  erase={"tool": "erase", "arguments": {"namespace": ns}})


def groups_of(data: list[dict]) -> list:
    from memrun.records import Group, Item, Record

    return [Group(h["id"], [Record(r["id"], r["text"]) for r in h["records"]],
                  [Item(f"{h['id']}:{i}", h["id"], h["id"], "1", q, None, "null", ()) for i, q in enumerate(h["questions"])])
            for h in data]


async def memrun_side(arm, args: argparse.Namespace) -> float:
    from memrun.pipeline.many_histories import Flow, FlowSettings

    for slot in range(args.sessions):  # the run's servers started before the clock, as the peer's
        await arm.servers.shared(slot)
    if args.mode == "calls":
        (group,) = groups_of(workload(1, 200, 50))
        await arm.ingest(group.history_id, group.records)
        queries = [item.question for item in group.items]
        for q in queries[:10]:
            await arm.search(q, 10, history_id=group.history_id)  # warm
        start = time.perf_counter()
        for i in range(args.calls):
            await arm.search(queries[i % 50], 10, history_id=group.history_id)
        took = (time.perf_counter() - start) / args.calls
        await arm.release(group.history_id)
        await arm.disconnect()
        return took
    groups = groups_of(workload(args.histories, 50, args.questions))
    flow, done, start = Flow(arm, 10, "key", FlowSettings(args.concurrency)), 0, time.perf_counter()
    took = 0.0
    async for _ in flow.groups(groups):
        done += 1
        if done == len(groups):  # the last rows are in (the flow's own clean-up is not timed)
            took = time.perf_counter() - start
    return took


def child(args: argparse.Namespace) -> None:
    if args.side == "plain":
        print(f"SECONDS {asyncio.run(plain(args))}")
        return
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as ledger:
        arm = memrun_arm(ledger, args.slow_ms / 1000 if args.mode == "flight" else 0, args.sessions)
        try:
            print(f"SECONDS {asyncio.run(memrun_side(arm, args))}")
        finally:
            arm.close()


# -- the parent: alternated pairs ------------------------------------------------------------

def pairs_of(mode: str, concurrency: int, args: argparse.Namespace, sessions: int = 1):
    import dataclasses

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _pairs import alternate, run_child

    common = [f"--mode={mode}", f"--concurrency={concurrency}", f"--calls={args.calls}", f"--slow-ms={args.slow_ms}",
              f"--histories={args.histories}", f"--questions={args.questions}", f"--sessions={sessions}"]

    def side(name: str):
        def run():
            done = run_child([str(Path(__file__).resolve()), "--child", f"--side={name}", *common],
                             env={"PYTHONPATH": str(ROOT)})
            seconds = float(done.stdout.split("SECONDS ")[-1].split()[0])
            return dataclasses.replace(done, seconds=seconds)
        return run

    return alternate(side("memrun"), side("plain"), args.pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--slow-ms", type=float, default=50)
    parser.add_argument("--histories", type=int, default=16)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=["memrun", "plain"], help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["calls", "flight"], default="calls", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--sessions", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    calls = pairs_of("calls", 1, args)
    print(f"tests/servers/mcp_server.py over stdio, {args.pairs} alternated pairs of processes (medians)")
    print(f"per search call ({args.calls} in a row, server answers at once):")
    print(f"  memrun arm=mcp (await McpArm.search): {1000 * calls.median('a'):.2f} ms   plain SDK call_tool: "
          f"{1000 * calls.median('b'):.2f} ms   ratio {calls.ratio:.2f}x  (goal <= 1.2x)")
    n_calls = args.histories * (args.questions + 2)
    print(f"wall time, {args.histories} histories x ({args.questions} searches + ingest + erase) = {n_calls} calls "
          f"of {args.slow_ms:g} ms:")
    for concurrency, sessions in ((1, 1), (16, 1), (16, 2)):
        flight = pairs_of("flight", concurrency, args, sessions)
        # the server's time alone, and never under one history's chain ingest -> search -> erase
        ideal = max(n_calls / concurrency, 3) * args.slow_ms / 1000
        ours, label = flight.median("a"), f"arm.concurrency {concurrency:2}" + (f", arm.sessions {sessions}" * (sessions > 1))
        print(f"  {label}: memrun {ours:.2f} s, plain asyncio SDK {flight.median('b'):.2f} s "
              f"(ratio {flight.ratio:.2f}x), ideal {ideal:.2f} s: memrun {ours / ideal:.2f}x the ideal"
              + ("  (goal <= 1.25x)" if concurrency == 16 and sessions == 1 else ""))


if __name__ == "__main__":
    main()
