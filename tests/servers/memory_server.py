"""A loopback server implementing memrun's reference memory API (docs/arms.md).

For tests and for trying ``arm=http`` by hand::

    python tests/servers/memory_server.py --port 8080 [--token SECRET]

Endpoints: ``GET /openapi.json`` (memory_openapi.yaml, for ``memrun arm init http``), ``GET /v1/health``, ``GET|POST /v1/namespaces``, ``GET /v1/namespaces/{ns}``
(``{"namespace", "count", "pending"}``: memories searchable and not yet),
``POST /v1/namespaces/{ns}/memories``, ``POST /v1/namespaces/{ns}/search``,
``DELETE /v1/namespaces/{ns}``. Search scores a memory by the number of distinct query
words it contains (ties in insertion order). Tests steer it through :class:`MemoryState`:
injected failures (``fail``: a status, ``"reset"`` for a TCP reset, ``"badjson"`` for a 200 whose body is
cut short, or 0 for none, instead of an
answer), a delay per search (``search_peak``: the most searches that slept it at once),
asynchronous indexing (``index_delay_s``: a memory becomes searchable that long after it
was acknowledged, as mem0 or Zep do), and logs of what was asked.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import struct
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

OPENAPI = yaml.safe_load((Path(__file__).parent / "memory_openapi.yaml").read_text())
WORD = re.compile(r"[a-z0-9]+")
NS_PATH = re.compile(r"^/v1/namespaces/([^/]+)(/memories|/search)?$")


@dataclass
class MemoryState:
    """What the server holds and how tests steer it."""

    token: str | None = None
    build: str = "refmem 1.0.0"
    providers: dict[str, str] = field(default_factory=lambda: {"embedder": "none", "llm": "none"})
    namespaces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fail: dict[str, list[int | str]] = field(default_factory=lambda: defaultdict(list))  # op -> statuses / "reset"
    search_delay_s: float = 0.0
    index_delay_s: float = 0.0
    ready_at: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # ns -> per memory
    searches: list[dict[str, Any]] = field(default_factory=list)
    answered: list[tuple[str, str, float]] = field(default_factory=list)  # (namespace, query, time.time()) once sent
    requests: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # each request's path as sent, query string included
    arrivals: list[tuple[str, float]] = field(default_factory=list)  # (op, time.monotonic()) per request
    sleeping: int = 0  # searches sleeping out search_delay_s now
    search_peak: int = 0  # the most searches that slept out search_delay_s at once
    retry_after: str = "0"  # the Retry-After of an injected 429
    failing_namespaces: list[str] = field(default_factory=list)  # every request to a namespace containing one: 500
    lock: threading.Lock = field(default_factory=threading.Lock)


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


class Handler(BaseHTTPRequestHandler):
    state: MemoryState  # set on the subclass built by serve()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        payload = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def _route(self, method: str) -> None:
        st = self.state
        body = self._body()
        if (method, self.path.split("?")[0]) == ("GET", "/openapi.json"):  # published without a token, as FastAPI does
            return self._send(200, OPENAPI)
        if st.token and self.headers.get("Authorization") != f"Bearer {st.token}":
            return self._send(401, {"error": "bad or missing token"})
        m = NS_PATH.match(self.path.split("?")[0])  # a query string (?api_key=...) is the client's business
        op = {
            ("GET", "/v1/health"): "health", ("GET", "/v1/namespaces"): "list", ("POST", "/v1/namespaces"): "create",
        }.get((method, self.path.split("?")[0]))
        if op is None and m:
            op = {("POST", "/memories"): "ingest", ("POST", "/search"): "search", ("DELETE", None): "erase",
                  ("GET", None): "stats"}.get((method, m.group(2)))
        if op is None:
            return self._send(404, {"error": f"no route {method} {self.path}"})
        with st.lock:
            st.requests.append(op)
            st.paths.append(self.path)
            st.arrivals.append((op, time.monotonic()))
            failing = st.fail[op].pop(0) if st.fail[op] else None
            if m and any(part in m.group(1) for part in st.failing_namespaces):
                failing = 500
        if failing == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return None
        if failing == "badjson":  # a reply cut short: status 200, a body that is not JSON
            payload = b'{"results": [{"id": "x", "score": 1.0, "con'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return None
        if failing:
            return self._send(int(failing), {"error": "injected"}, {"Retry-After": st.retry_after} if failing == 429 else None)
        getattr(self, f"_{op}")(m.group(1) if m else None, body)

    def _health(self, ns: str | None, body: Any) -> None:
        self._send(200, {"build": self.state.build, "model": "none", "providers": self.state.providers,
                         "embedder": {"name": "bag-of-words", "dim": 0}})

    def _list(self, ns: str | None, body: Any) -> None:
        self._send(200, {"namespaces": sorted(self.state.namespaces)})

    def _create(self, ns: str | None, body: Any) -> None:
        name = (body or {}).get("namespace")
        with self.state.lock:
            if not name or name in self.state.namespaces:
                return self._send(409, {"error": f"namespace {name!r} exists or is empty"})
            self.state.namespaces[name] = []
            self.state.ready_at[name] = []
        self._send(201, {"namespace": name})

    def _ingest(self, ns: str, body: Any) -> None:
        with self.state.lock:
            if ns not in self.state.namespaces:
                return self._send(404, {"error": f"no namespace {ns}"})
            self.state.namespaces[ns].extend(body["memories"])
            self.state.ready_at[ns].extend([time.monotonic() + self.state.index_delay_s] * len(body["memories"]))
        self._send(200, {"added": len(body["memories"])})

    def _stats(self, ns: str, body: Any) -> None:
        with self.state.lock:
            if ns not in self.state.namespaces:
                return self._send(404, {"error": f"no namespace {ns}"})
            now, memories = time.monotonic(), self.state.namespaces[ns]
            count = sum(t <= now for t in self.state.ready_at[ns][: len(memories)])
        self._send(200, {"namespace": ns, "count": count, "pending": len(memories) - count})

    def _search(self, ns: str, body: Any) -> None:
        if self.state.search_delay_s:
            self._sleep_counted(self.state.search_delay_s)
        with self.state.lock:
            self.state.searches.append({"namespace": ns, **body})
            now, ready_at = time.monotonic(), self.state.ready_at.get(ns, [])
            memories = [m for m, t in zip(self.state.namespaces.get(ns, []), ready_at) if t <= now]  # indexed ones
        if ns not in self.state.namespaces:
            return self._send(404, {"error": f"no namespace {ns}"})
        query = _words(body["query"])
        scored = [(len(query & _words(m["content"])), i, m) for i, m in enumerate(memories)]
        scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[: int(body["limit"])]
        self._send(200, {"results": [{"id": m["id"], "score": float(s), "content": m["content"]} for s, _, m in scored],
                         "took_ms": 0})
        self.wfile.flush()
        with self.state.lock:
            self.state.answered.append((ns, body["query"], time.time()))

    def _sleep_counted(self, seconds: float) -> None:
        """Sleep ``seconds`` as one of the searches in the server (:attr:`MemoryState.search_peak`)."""
        with self.state.lock:
            self.state.sleeping += 1
            self.state.search_peak = max(self.state.search_peak, self.state.sleeping)
        try:
            time.sleep(seconds)
        finally:
            with self.state.lock:
                self.state.sleeping -= 1

    def _erase(self, ns: str, body: Any) -> None:
        with self.state.lock:
            self.state.ready_at.pop(ns, None)
            if self.state.namespaces.pop(ns, None) is None:
                return self._send(404, {"error": f"no namespace {ns}"})
        self._send(204)

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")


class LoopbackHTTPServer(ThreadingHTTPServer):
    """The tests' threaded HTTP servers, with a listen backlog for concurrent clients."""

    # The listen backlog. socketserver's default, 5, dropped the connections a concurrent
    # arm opens at once beyond it: the client's kernel sent them again 1 s later, so a
    # request sent at t arrived at t + 1 s (read as a late request by the timing tests).
    request_queue_size = 1024


def serve(state: MemoryState, port: int = 0, idle_close_s: float | None = None) -> ThreadingHTTPServer:
    """Start the server on 127.0.0.1 in a daemon thread; ``server.shutdown()`` stops it.
    idle_close_s: keep connections alive (HTTP/1.1) and close one idle that long, as servers
    do (uvicorn after 5 s, nginx after 75 s); None: one request a connection (HTTP/1.0)."""
    attributes: dict[str, Any] = {"state": state}
    if idle_close_s is not None:
        attributes.update(protocol_version="HTTP/1.1", timeout=idle_close_s)
    handler = type("BoundHandler", (Handler,), attributes)
    server = LoopbackHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--token", default=None)
    args = parser.parse_args()
    server = serve(MemoryState(token=args.token), args.port)
    print(f"reference memory server on http://127.0.0.1:{server.server_address[1]} (Ctrl-C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
