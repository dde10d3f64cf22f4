"""arm=mcp's overhead per call against a plain ``mcp`` SDK client doing the same calls.

Both talk to the tests' MCP server (tests/servers/mcp_server.py, one process each, same
script, same namespace of 200 records): memrun's side is ``McpArm.search`` as the run
calls it (synchronous, through the arm's private event loop thread, arguments rendered
from templates and checked against the tool's inputSchema, the result mapped by
JMESPath into hits); the peer is a plain SDK script, ``await session.call_tool("search",
...)`` on its own event loop, reading ``hits`` from its structuredContent or JSON text. Blocks of calls
alternate (A B A B ...) so drift in the machine's load hits both; the figure is the
median of the per-block ratios (goal: <= 1.2x).

    python bench/bench_mcp_arm.py [--blocks 10] [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "mcp_server.py"
sys.path.insert(0, str(ROOT))

from memrun.arms.mcp import McpArm  # noqa: E402
from memrun.records import Record  # noqa: E402

WORDS = "cat tuna grey bicycle lisbon cello sunday garden river piano".split()
RECORDS = [Record(f"D{i // 20}:{i}", f"record {i} about {WORDS[i % 10]} and {WORDS[(i * 3) % 10]}", None, "s")
           for i in range(200)]
QUERIES = [f"what about the {WORDS[i % 10]}" for i in range(50)]


def memrun_arm(ledger: str) -> McpArm:
    ns = "{{ namespace }}"
    return McpArm(command=sys.executable, args=[str(SERVER)], ledger_dir=ledger, start_timeout_s=120,
                  ingest={"tool": "store", "record": {"id": "{{ record.key }}", "text": "{{ record.text }}"},
                          "arguments": {"namespace": ns, "records": "{{ records }}"}},
                  search={"tool": "search", "arguments": {"namespace": ns, "query": "{{ query }}", "k": "{{ k }}"},
                          "result": "hits[].{key: id, score: score, text: text}"},
                  erase={"tool": "erase", "arguments": {"namespace": ns}})


class PlainClient:
    """The peer: the SDK's documented client pattern, nothing else."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self._open())

    async def _open(self) -> None:
        from contextlib import AsyncExitStack

        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self.stack = AsyncExitStack()
        read, write = await self.stack.enter_async_context(
            stdio_client(StdioServerParameters(command=sys.executable, args=[str(SERVER)])))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        await self.session.call_tool("store", {"namespace": "plain", "records": [
            {"id": r.key, "text": r.text} for r in RECORDS]})

    def search(self, query: str, k: int) -> list:
        async def call() -> list:
            result = await self.session.call_tool("search", {"namespace": "plain", "query": query, "k": k})
            doc = result.structured_content or json.loads(result.content[0].text)
            return doc["hits"]
        return self.loop.run_until_complete(call())

    def close(self) -> None:
        """The server exits when this process does (its stdin closes); the transport's cancel
        scopes belong to the tasks that opened them, so they are not left here."""


async def _in_loop(arm: McpArm, calls: int) -> tuple[float, float]:
    """Per call: ``arm.asearch`` and the bare ``call_tool`` on the arm's own session, awaited
    on its loop (no thread hop): the arm's own work, apart from the sync facade."""
    session = arm._session._session  # noqa: SLF001 - the same session, without the arm around it
    start = time.perf_counter()
    for i in range(calls):
        await arm.asearch(QUERIES[i % len(QUERIES)], 10)
    mid = time.perf_counter()
    for i in range(calls):
        await session.call_tool("search", {"namespace": arm._namespace, "query": QUERIES[i % len(QUERIES)], "k": 10})
    return (mid - start) / calls, (time.perf_counter() - mid) / calls


def block(search, calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        search(QUERIES[i % len(QUERIES)], 10)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as ledger:
        arm, plain = memrun_arm(ledger), PlainClient()
        arm.ingest("bench", RECORDS)
        assert [h.key for h in arm.search("cello", 10)] == [h["id"] for h in plain.search("cello", 10)]
        block(arm.search, 10), block(plain.search, 10)  # warm both
        ratios, ours, theirs = [], [], []
        for _ in range(args.blocks):
            a, b = block(arm.search, args.calls), block(plain.search, args.calls)
            ours.append(a), theirs.append(b), ratios.append(a / b)
        in_loop = [arm._loop.run(_in_loop(arm, args.calls)) for _ in range(args.blocks)]
        arm.close(), plain.close()
    print(f"search call, {args.blocks} alternated blocks of {args.calls} calls, tests/servers/mcp_server.py over stdio")
    print(f"  memrun arm=mcp (sync, templates, inputSchema check, JMESPath): {1000 * statistics.median(ours):.2f} ms/call")
    print(f"  plain mcp SDK client (call_tool, hits from the JSON result):   {1000 * statistics.median(theirs):.2f} ms/call")
    print(f"  ratio (median of per-block ratios): {statistics.median(ratios):.2f}x  (goal <= 1.2x)")
    coro, raw = statistics.median(a for a, _ in in_loop), statistics.median(b for _, b in in_loop)
    print(f"  awaited on the arm's own loop and session (what an async run gets): McpArm.asearch "
          f"{1000 * coro:.2f} ms/call, bare session.call_tool {1000 * raw:.2f} ms/call: "
          f"{statistics.median(a / b for a, b in in_loop):.2f}x")


if __name__ == "__main__":
    main()
