"""A tiny MCP memory server of the tests' own (stdio, or streamable HTTP with --http PORT).

Tools: ``store(namespace, records=[{id, text}])``, ``search(namespace, query, k)`` (word
overlap, structured ``{hits: [{id, score, text}]}``), ``erase(namespace)``,
``info()`` (``{build, search_mode}``), ``text_search`` (the same hits as JSON *text*
content only, no structured content). Faults, from the environment:

- ``MCP_TEST_STATE``: a JSON file rewritten after every call (namespaces and their ids;
  the tests read it after the server is gone);
- ``MCP_TEST_FAIL_START``: print it on stderr and exit 3 before serving;
- ``MCP_TEST_SLOW_S``: seconds every tool call sleeps (the state file then also records
  ``peak_in_flight``: the most calls that slept at once);
- ``MCP_TEST_SLOW_QUERY``: a search for exactly this query never answers;
- ``MCP_TEST_CRASH_AFTER``: after this many tool calls the process exits (stderr says so);
- ``MCP_TEST_ECHO``: print its arguments and its ``MEMSRV*`` variables on stderr at
  start (a server that logs its command line: what memrun quotes from it must be clean);
- ``MCP_TEST_NOISE``: print this many lines that are not JSON on stdout as it starts;
- ``MCP_TEST_SCHEMA_FILE``: when this file exists as the server starts, ``v2`` as below
  (a server upgraded in the middle of a run);
- ``MCP_TEST_SCHEMA``: ``v2`` adds an optional ``filter`` argument to ``search`` (a
  changed input schema, as a new server version would have).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("memrun-test-memory", version="0.3.1")
NAMESPACES: dict[str, list[dict[str, str]]] = {}
CALLS = [0]
IN_FLIGHT = {"now": 0, "peak": 0}
WORD = re.compile(r"[a-z0-9]+")


async def _before() -> None:
    CALLS[0] += 1
    crash = os.environ.get("MCP_TEST_CRASH_AFTER")
    if crash and CALLS[0] > int(crash):
        sys.stderr.write(f"mcp test server: crashing on call {CALLS[0]} as asked (MCP_TEST_CRASH_AFTER)\n")
        sys.stderr.flush()
        os._exit(7)
    if os.environ.get("MCP_TEST_SLOW_S"):
        IN_FLIGHT["now"] += 1
        IN_FLIGHT["peak"] = max(IN_FLIGHT["peak"], IN_FLIGHT["now"])
        try:
            await asyncio.sleep(float(os.environ["MCP_TEST_SLOW_S"]))
        finally:
            IN_FLIGHT["now"] -= 1
        _save()


def _save() -> None:
    path = os.environ.get("MCP_TEST_STATE")
    if path:
        data = {"pid": os.getpid(), "namespaces": {n: [r["id"] for r in rs] for n, rs in NAMESPACES.items()},
                "peak_in_flight": IN_FLIGHT["peak"]}
        with open(path + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(path + ".tmp", path)


@server.tool()
async def store(namespace: str, records: list[dict[str, str]]) -> dict:
    """Store records ({id, text}) in a namespace (created on first use)."""
    await _before()
    NAMESPACES.setdefault(namespace, []).extend(records)
    _save()
    return {"stored": len(records)}


def _rank(namespace: str, query: str, k: int) -> list[dict]:
    words = set(WORD.findall(query.lower()))
    scored = []
    for r in NAMESPACES.get(namespace, []):
        overlap = len(words & set(WORD.findall(r["text"].lower())))
        if overlap:
            scored.append({"id": r["id"], "score": float(overlap), "text": r["text"]})
    scored.sort(key=lambda h: -h["score"])
    return scored[:k]


if os.environ.get("MCP_TEST_SCHEMA") == "v2" or os.path.exists(os.environ.get("MCP_TEST_SCHEMA_FILE") or "\0"):
    @server.tool()
    async def search(namespace: str, query: str, k: int = 10, filter: str | None = None) -> dict:
        """Search a namespace (v2: with an optional filter)."""
        await _before()
        return {"hits": _rank(namespace, query, k)}
else:
    @server.tool()
    async def search(namespace: str, query: str, k: int = 10) -> dict:
        """Search a namespace: records sharing words with the query, most shared first."""
        await _before()
        if query == os.environ.get("MCP_TEST_SLOW_QUERY"):
            await asyncio.sleep(3600)
        return {"hits": _rank(namespace, query, k)}


@server.tool()
async def text_search(namespace: str, query: str, k: int = 10) -> str:
    """The same hits as ``search``, as JSON text."""
    await _before()
    return json.dumps({"hits": _rank(namespace, query, k)})


@server.tool()
async def erase(namespace: str) -> dict:
    """Drop a namespace."""
    await _before()
    existed = NAMESPACES.pop(namespace, None) is not None
    _save()
    return {"erased": existed}


@server.tool()
async def info() -> dict:
    """Build and search mode (health)."""
    await _before()
    return {"build": "testmem 0.3.1", "search_mode": "lexical"}


if __name__ == "__main__":
    for n in range(int(os.environ.get("MCP_TEST_NOISE") or 0)):  # a server that logs to stdout, the protocol's channel
        sys.stdout.write(f"debug: starting, step {n}\n")
    sys.stdout.flush()
    if os.environ.get("MCP_TEST_ECHO"):
        sys.stderr.write(f"mcp test server: argv {sys.argv[1:]}\n")
        for name in sorted(n for n in os.environ if n.startswith("MEMSRV")):
            sys.stderr.write(f"mcp test server: {name}={os.environ[name]}\n")
        sys.stderr.flush()
    if os.environ.get("MCP_TEST_FAIL_START"):
        sys.stderr.write(os.environ["MCP_TEST_FAIL_START"] + "\n")
        sys.exit(3)
    _save()
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        time.sleep(0)
        server.run()
