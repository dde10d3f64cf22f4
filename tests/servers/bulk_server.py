"""A loopback server in the style of a search engine's REST API, for ``arm=http`` configs
whose requests are not all JSON (tests only).

Endpoints, shaped like Elasticsearch/OpenSearch's:

- ``PUT /{index}``: create an index (``200 {"acknowledged": true}``; 400 if it exists);
- ``POST /_bulk``: NDJSON (``Content-Type: application/x-ndjson``), pairs of lines
  ``{"index": {"_index": ..., "_id": ...}}`` then the document ``{"text": ...}``;
  ``{"errors": false, "items": [...]}``; a body that is not NDJSON: 400;
- ``POST /{index}/_notes``: one document as a form (``id=...&text=...``,
  ``application/x-www-form-urlencoded``);
- ``PUT /{index}/_raw/{id}``: one document as plain text (``text/plain``);
- ``POST /{index}/_search``: JSON ``{"query": {"match": {"text": q}}, "size": k}`` ->
  ``{"hits": {"hits": [{"_id", "_score", "_source": {"text"}}]}}``, scored by the number of
  distinct query words a document contains;
- ``GET /{index}/_count``: ``{"count": n}``; ``DELETE /{index}``.

Every request's method, path and Content-Type is logged in :attr:`BulkState.requests`.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from servers.memory_server import LoopbackHTTPServer

WORD = re.compile(r"[a-z0-9]+")


@dataclass
class BulkState:
    """Indexes (name -> id -> text) and a log of (method, path, content type)."""

    indexes: dict[str, dict[str, str]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    state: BulkState

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _answer(self, status: int, body: Any = None) -> None:
        data = json.dumps(body if body is not None else {}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self, method: str) -> None:
        path = unquote(self.path)
        kind = self.headers.get("Content-Type", "")
        body = self._body()
        state = self.state
        with state.lock:
            state.requests.append((method, path, kind))
            parts = [p for p in path.split("/") if p]
            if method == "PUT" and len(parts) == 1:
                if parts[0] in state.indexes:
                    return self._answer(400, {"error": "resource_already_exists_exception"})
                state.indexes[parts[0]] = {}
                return self._answer(200, {"acknowledged": True})
            if method == "DELETE" and len(parts) == 1:
                return self._answer(200 if state.indexes.pop(parts[0], None) is not None else 404, {})
            if method == "POST" and parts == ["_bulk"]:
                return self._bulk(kind, body)
            if len(parts) >= 2 and parts[0] not in state.indexes:
                return self._answer(404, {"error": "index_not_found_exception"})
            if method == "POST" and len(parts) == 2 and parts[1] == "_notes":
                if not kind.startswith("application/x-www-form-urlencoded"):
                    return self._answer(415, {"error": f"form expected, got {kind}"})
                form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                state.indexes[parts[0]][form["id"]] = form["text"]
                return self._answer(201, {"result": "created"})
            if method == "PUT" and len(parts) == 3 and parts[1] == "_raw":
                if not kind.startswith("text/plain"):
                    return self._answer(415, {"error": f"text expected, got {kind}"})
                state.indexes[parts[0]][parts[2]] = body.decode()
                return self._answer(201, {"result": "created"})
            if method == "GET" and len(parts) == 2 and parts[1] == "_count":
                return self._answer(200, {"count": len(state.indexes[parts[0]])})
            if method == "POST" and len(parts) == 2 and parts[1] == "_search":
                query = json.loads(body)
                return self._answer(200, {"hits": {"hits": self._search(parts[0], query)}})
        return self._answer(404, {"error": f"no route {method} {path}"})

    def _bulk(self, kind: str, body: bytes) -> None:
        if not kind.startswith("application/x-ndjson") or not body.endswith(b"\n"):
            return self._answer(400, {"error": "the bulk body must be NDJSON ending with a newline"})
        try:
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        except ValueError:
            return self._answer(400, {"error": "a bulk line is not JSON"})
        items = []
        for action, document in zip(lines[::2], lines[1::2]):
            target = action["index"]
            index = self.state.indexes.setdefault(target["_index"], {})
            index[str(target["_id"])] = document["text"]
            items.append({"index": {"_id": target["_id"], "status": 201}})
        return self._answer(200, {"errors": False, "items": items})

    def _search(self, index: str, query: dict[str, Any]) -> list[dict[str, Any]]:
        words = set(WORD.findall(query["query"]["match"]["text"].lower()))
        scored = [(len(words & set(WORD.findall(text.lower()))), doc_id, text)
                  for doc_id, text in self.state.indexes[index].items()]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])[: int(query.get("size", 10))]
        return [{"_id": doc_id, "_score": float(score), "_source": {"text": text}} for score, doc_id, text in ranked]

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")


def serve(state: BulkState) -> ThreadingHTTPServer:
    """Start the server on a free loopback port in a daemon thread; ``shutdown()`` stops it."""
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = LoopbackHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
