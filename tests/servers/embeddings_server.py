"""A loopback OpenAI-compatible embeddings endpoint (``POST /v1/embeddings``) for tests.

Vectors are feature-hashed bags of words (crc32 of each lower-cased word picks one of
``dim`` buckets), so texts sharing words are similar and a dense arm on top of it
retrieves sensibly, with no model. The state logs requests and can fail on demand.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"[a-z0-9]+")


@dataclass
class EmbeddingsState:
    dim: int = 64
    api_key: str | None = None
    fail: list[int] = field(default_factory=list)  # statuses to return next
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def texts_embedded(self) -> int:
        return sum(len(r["input"]) for r in self.requests)


def hashed_vector(text: str, dim: int) -> list[float]:
    """The bag-of-words vector the server returns for ``text``."""
    vec = [0.0] * dim
    for word in WORD.findall(text.lower()):
        vec[zlib.crc32(word.encode()) % dim] += 1.0
    return vec


class Handler(BaseHTTPRequestHandler):
    state: EmbeddingsState

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        st = self.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        if st.api_key and self.headers.get("Authorization") != f"Bearer {st.api_key}":
            return self._send(401, {"error": {"message": "Incorrect API key provided"}})
        with st.lock:
            failing = st.fail.pop(0) if st.fail else None
            if not failing:
                st.requests.append(body)
        if failing:
            return self._send(failing, {"error": {"message": "injected"}}, {"Retry-After": "0"})
        dim = int(body.get("dimensions") or st.dim)
        data = [{"object": "embedding", "index": i, "embedding": hashed_vector(t, dim)}
                for i, t in reversed(list(enumerate(body["input"])))]  # out of order, as the API allows
        self._send(200, {"object": "list", "data": data, "model": body["model"]})


def serve(state: EmbeddingsState) -> ThreadingHTTPServer:
    """Start on 127.0.0.1 (free port) in a daemon thread; ``server.shutdown()`` stops it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("BoundHandler", (Handler,), {"state": state}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
