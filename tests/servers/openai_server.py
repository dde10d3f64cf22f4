"""A loopback server speaking the OpenAI chat completions and embeddings APIs, scripted per request.

For tests and benches only; it listens on 127.0.0.1 and never reaches a real API.

    with OpenAIServer(latency=0.05) as server:
        server.script(Reply.rate_limited(retry_after="0.3"), Reply.ok("Paris"))
        ...  # point a client at server.base_url (".../v1")
        server.count("/v1/chat/completions")

Each request to a route takes the next scripted :class:`Reply` when one is queued,
else the route's default: for chat completions, ``server.responder(body) -> str``
(``default_responder``: a JSON verdict for judge prompts, a fixed answer otherwise;
``varied_responder``, ``--replies varied`` standalone: answers and verdicts that vary per prompt).
The server counts requests per route and logs them (arrival time, path, parsed body).

Routes live in :attr:`OpenAIServer.routes` (path -> handler taking the parsed body and
returning a :class:`Reply`), so another endpoint is one method plus one entry.
``/v1/embeddings`` answers with :func:`hashed_vector` (feature-hashed word counts of
``embedding_dim`` buckets, or the request's ``dimensions``): texts sharing words are
similar, so a dense arm on top of it retrieves sensibly, with no model.

Run standalone (for benches, in its own process): ``python tests/servers/openai_server.py
--latency 0.1`` prints ``PORT <n>`` and serves until killed; ``GET /_stats`` returns the
counts as JSON, ``GET /_bodies?from=N&to=M`` the bodies of chat requests N..M-1 (a bench's
peer replays the very requests memrun sent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import struct
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs


@dataclass
class Reply:
    """One scripted response: status, headers, body (dict -> JSON, str -> raw), extra delay (s).

    fault: ``reset`` closes the connection with a TCP reset instead of answering;
    ``truncate`` sends the headers and half the body, then closes the connection.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    fault: str | None = None

    @classmethod
    def ok(cls, text: str, *, prompt_tokens: int | None = 10, completion_tokens: int | None = 5, delay: float = 0.0,
           model: str = "m") -> Reply:
        return cls(200, completion(text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, model=model),
                   delay=delay)

    @classmethod
    def rate_limited(cls, retry_after: str | None = None) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls(status, {"error": {"message": "upstream failed", "type": "server_error"}})

    @classmethod
    def error(cls, status: int, message: str, code: str | None = None) -> Reply:
        return cls(status, {"error": {"message": message, "type": "invalid_request_error", "code": code}})

    @classmethod
    def reset(cls) -> Reply:
        """The connection is reset before any byte of the response."""
        return cls(fault="reset")

    @classmethod
    def truncated(cls, text: str = "cut short") -> Reply:
        """A 200 whose body stops halfway (Content-Length promises more)."""
        return cls(200, completion(text), fault="truncate")

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose body is not JSON."""
        return cls(200, "this is {not json")

    @classmethod
    def no_choices(cls) -> Reply:
        return cls(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []})


def completion(text: str, *, prompt_tokens: int | None = 10, completion_tokens: int | None = 5, model: str = "m") -> dict[str, Any]:
    """A chat.completion body; ``usage`` is left out when both token counts are None."""
    body: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if prompt_tokens is not None or completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens or 0,
            "completion_tokens": completion_tokens or 0,
            "total_tokens": (prompt_tokens or 0) + (completion_tokens or 0),
        }
    return body


def prompt_text(body: dict[str, Any]) -> str:
    """All message contents of a chat request, joined."""
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def default_responder(body: dict[str, Any]) -> str:
    """A JSON CORRECT verdict for a judge prompt (one that asks for a verdict), else a fixed answer."""
    if '"verdict"' in prompt_text(body):
        return json.dumps({"verdict": "CORRECT", "explanation": "loopback default"})
    return "loopback answer"


def varied_responder(body: dict[str, Any]) -> str:
    """Replies that vary as a model's do, each a pure function of the prompt (as at temperature 0):
    an answer naming the prompt's crc32, and for a judge prompt a verdict drawn from it
    (CORRECT 60%, WRONG 30%, ABSTAIN 10%) with an explanation naming it. A bench that answers
    every prompt alike would credit memrun's per-text memos with reuse that real replies lack."""
    text = prompt_text(body)
    digest = zlib.crc32(text.encode())
    if '"verdict"' in text:
        verdict = "CORRECT" if digest % 10 < 6 else "WRONG" if digest % 10 < 9 else "ABSTAIN"
        return json.dumps({"verdict": verdict, "explanation": f"the reply and the gold compared ({digest:08x})"})
    return f"loopback answer {digest:08x}"


def hashed_vector(text: str, dim: int) -> list[float]:
    """The embedding the server returns for ``text``: crc32 of each lower-cased word picks a bucket."""
    vec = [0.0] * dim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vec[zlib.crc32(word.encode()) % dim] += 1.0
    return vec


@dataclass
class Logged:
    t: float
    path: str
    body: Any
    headers: dict[str, str]
    query: str = ""  # the request target's query string, as sent


class OpenAIServer:
    """The server (see the module docstring). latency: seconds added to every request.

    An asyncio HTTP/1.1 server (keep-alive) on its own event loop in a daemon thread, so
    thousands of concurrent slow requests cost little CPU.
    """

    def __init__(self, latency: float = 0.0, host: str = "127.0.0.1", port: int = 0) -> None:
        self.latency = latency
        self.responder: Callable[[dict[str, Any]], str] = default_responder
        self.usage: tuple[int | None, int | None] = (10, 5)
        self.embedding_dim = 64
        # the model name replies report: None echoes the request's (as OpenAI does); a string
        # answers every request with it, as a local server serving one loaded model may
        self.served_model: str | None = None
        self.routes: dict[str, Callable[[dict[str, Any]], Reply]] = {
            "/v1/chat/completions": self._chat, "/v1/embeddings": self._embeddings,
        }
        self.log: list[Logged] = []
        self.answered: list[tuple[float, Any]] = []  # (time.time(), request body) once its reply was sent
        self._counts: Counter[str] = Counter()
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._host, self._port = host, port
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self._port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests (any route), in order."""
        with self._lock:
            self._queue.extend(replies)

    def count(self, path: str = "/v1/chat/completions") -> int:
        """Requests received on ``path`` so far."""
        with self._lock:
            return self._counts[path]

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self.log.clear()
            self._queue.clear()

    def start(self) -> OpenAIServer:
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._connection, self._host, self._port, backlog=1024)
            )
            self._port = self._server.sockets[0].getsockname()[1]
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="openai-loopback", daemon=True)
        self._thread.start()
        started.wait(10)
        return self

    def stop(self) -> None:
        def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.call_soon(self._loop.stop)

        self._loop.call_soon_threadsafe(close)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- routes ----------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> Reply:
        prompt_tokens, completion_tokens = self.usage
        model = self.served_model or str(body.get("model") or "m")
        return Reply.ok(self.responder(body), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                        model=model)

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        dim = int(body.get("dimensions") or self.embedding_dim)
        data = [{"object": "embedding", "index": i, "embedding": hashed_vector(t, dim)}
                for i, t in reversed(list(enumerate(body.get("input", []))))]  # out of order, as the API allows
        return Reply(200, {"object": "list", "data": data, "model": body.get("model")})

    def _respond(self, path: str, body: Any, headers: dict[str, str], query: str = "") -> Reply:
        with self._lock:
            self._counts[path] += 1
            self.log.append(Logged(time.monotonic(), path, body, headers, query))
            scripted = self._queue.popleft() if self._queue and not path.startswith("/_") else None
        if path == "/_stats":
            return Reply(200, {"counts": dict(self._counts)})
        if path == "/_bodies":  # ?from=N&to=M: the bodies of chat requests N..M-1, in arrival order
            window = {k: int(v[0]) for k, v in parse_qs(query).items() if k in ("from", "to")}
            with self._lock:
                chats = [e.body for e in self.log if e.path == "/v1/chat/completions"]
            return Reply(200, chats[window.get("from", 0):window.get("to")])
        route = self.routes.get(path)
        if route is None:
            return Reply.error(404, f"no route {path}")
        return scripted or route(body if isinstance(body, dict) else {})

    # -- HTTP/1.1 ----------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = (lines[0].split(" ") + ["", ""])[:3]
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}") if method == "POST" else None
                except ValueError:
                    body = None
                path, _, query = target.partition("?")
                reply = self._respond(path, body, headers, query)
                await asyncio.sleep(self.latency + reply.delay)
                if reply.fault == "reset":
                    reset(writer)
                    return
                payload = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
                data = payload.encode() if isinstance(payload, str) else payload
                extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
                writer.write(
                    f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n{extra}\r\n".encode() + data[: len(data) // 2 if reply.fault else None]
                )
                await writer.drain()
                if not reply.fault and reply.status < 400:
                    with self._lock:
                        self.answered.append((time.time(), body))
                if reply.fault == "truncate":
                    return
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            writer.close()


def reset(writer: asyncio.StreamWriter) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0), as a crashing proxy does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def main() -> None:
    parser = argparse.ArgumentParser(description="loopback OpenAI-compatible chat server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--replies", choices=["fixed", "varied"], default="fixed",
                        help="fixed: default_responder; varied: varied_responder (per-prompt answers and verdicts)")
    args = parser.parse_args()
    server = OpenAIServer(latency=args.latency, port=args.port)
    if args.replies == "varied":
        server.responder = varied_responder
    server.start()
    print(f"PORT {server.port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
