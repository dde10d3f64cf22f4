"""A loopback notes server with an API shaped unlike memrun's reference one, for
``memrun arm init http``: one note per request, a GET search with query parameters,
per-user deletion, camel-case ids and ``$ref`` schemas in its OpenAPI document.

``GET /openapi.json``; ``GET /status``; ``POST /notes`` (``{userId, noteId, text}``);
``GET /notes/search?userId=&q=&limit=`` (``{"matches": [{noteId, text, similarity}]}``,
by shared words); ``DELETE /users/{userId}/notes``.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from servers.memory_server import LoopbackHTTPServer

WORD = re.compile(r"[a-z0-9]+")
USER_NOTES = re.compile(r"^/users/([^/]+)/notes$")
OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Notes API", "version": "2.4.1"},
    "paths": {
        "/status": {"get": {"operationId": "getStatus", "responses": {"200": {"description": "ok"}}}},
        "/notes": {"post": {
            "operationId": "createNote",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/NoteIn"}}}},
            "responses": {"201": {"description": "stored"}}}},
        "/notes/search": {"get": {
            "operationId": "searchNotes",
            "parameters": [{"$ref": "#/components/parameters/UserId"},
                           {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                           {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 10}}],
            "responses": {"200": {"description": "matches"}}}},
        "/users/{userId}/notes": {"delete": {
            "operationId": "deleteUserNotes",
            "parameters": [{"name": "userId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"204": {"description": "deleted"}}}},
    },
    "components": {
        "parameters": {"UserId": {"name": "userId", "in": "query", "required": True, "schema": {"type": "string"}}},
        "schemas": {"NoteIn": {"type": "object", "required": ["userId", "text"], "properties": {
            "userId": {"type": "string"}, "noteId": {"type": "string"}, "text": {"type": "string"}}}},
    },
}


class NotesHandler(BaseHTTPRequestHandler):
    notes: dict[str, list[dict[str, str]]]  # user -> notes; set by serve()
    lock: threading.Lock

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: Any = None) -> None:
        payload = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/openapi.json":
            return self._send(200, OPENAPI)
        if url.path == "/status":
            return self._send(200, {"status": "ok", "version": "2.4.1"})
        if url.path != "/notes/search":
            return self._send(404, {"detail": "Not Found"})
        query = parse_qs(url.query)
        words = set(WORD.findall(query["q"][0].lower()))
        with self.lock:
            notes = list(self.notes.get(query["userId"][0], []))
        scored = sorted(((len(words & set(WORD.findall(n["text"].lower()))), i, n) for i, n in enumerate(notes)),
                        key=lambda s: (-s[0], s[1]))
        limit = int(query.get("limit", ["10"])[0])
        self._send(200, {"matches": [{**n, "similarity": s / max(len(words), 1)} for s, _, n in scored if s][:limit]})

    def do_POST(self) -> None:
        if self.path != "/notes":
            return self._send(404, {"detail": "Not Found"})
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with self.lock:
            self.notes.setdefault(body["userId"], []).append({"noteId": body.get("noteId") or "", "text": body["text"]})
        self._send(201, {"ok": True})

    def do_DELETE(self) -> None:
        m = USER_NOTES.match(self.path)
        if not m:
            return self._send(404, {"detail": "Not Found"})
        with self.lock:
            self.notes.pop(m.group(1), None)
        self._send(204)


def serve(port: int = 0) -> ThreadingHTTPServer:
    """Start the server on 127.0.0.1 in a daemon thread; ``server.notes`` is its store."""
    handler = type("BoundNotes", (NotesHandler,), {"notes": {}, "lock": threading.Lock()})
    server = LoopbackHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.notes = handler.notes  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
