"""The shared HTTP policy against a real loopback server that answers from a script."""

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from memrun.http_policy import HttpPolicy, Retrier, asend, retry_after_seconds, send


class Scripted(BaseHTTPRequestHandler):
    script: list[tuple[int, dict[str, str], str]] = []
    seen = 0

    def do_POST(self):  # noqa: N802
        type(self).seen += 1
        status, headers, body = self.script.pop(0) if self.script else (200, {}, "ok")
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Scripted.script, Scripted.seen = [], 0
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/x"
    srv.shutdown()


def run(url, script, policy=HttpPolicy()):
    Scripted.script = list(script)
    waits: list[float] = []
    with httpx.Client() as client:
        try:
            response = send(client, "POST", url, policy=policy, sleep=waits.append)
        except httpx.HTTPStatusError as exc:
            return exc, waits
    return response, waits


def test_429_waits_retry_after_and_does_not_use_the_5xx_budget(server):
    script = [(429, {"Retry-After": "3"}, ""), (429, {}, ""), (429, {"Retry-After": "0"}, ""),
              (503, {}, ""), (503, {}, ""), (503, {}, ""), (200, {}, "done")]
    response, waits = run(server, script)
    assert response.status_code == 200 and response.text == "done"
    assert waits == [3.0, 1.0, 0.2, 0.5, 1.0, 2.0]  # 429s: as told, default 1, clamped; 5xx: 0.5 x 2^n
    assert Scripted.seen == 7


def test_5xx_gives_up_after_attempts_requests_with_the_body(server):
    exc, waits = run(server, [(500, {}, "boom " * 100)] * 10, HttpPolicy(attempts=3))
    assert isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 500
    assert Scripted.seen == 3 and waits == [0.5, 1.0]
    assert "boom" in str(exc) and len(str(exc)) < 500


def test_other_4xx_raise_at_once(server):
    exc, waits = run(server, [(400, {}, '{"error": "bad model"}')])
    assert isinstance(exc, httpx.HTTPStatusError) and "bad model" in str(exc) and waits == []


def test_rate_limit_waits_are_bounded(server):
    exc, waits = run(server, [(429, {"Retry-After": "0.3"}, "slow down")] * 10, HttpPolicy(max_rate_limit_waits=4))
    assert isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 429 and waits == [0.3] * 4


def test_async_send_follows_the_same_rules(server):
    Scripted.script = [(503, {}, ""), (429, {"Retry-After": "100"}, ""), (200, {}, "ok")]
    waits: list[float] = []

    async def fake_sleep(s):
        waits.append(s)

    async def go():
        async with httpx.AsyncClient() as client:
            return await asend(client, "POST", server, sleep=fake_sleep)

    assert asyncio.run(go()).status_code == 200 and waits == [0.5, 60.0]


def test_real_sleep_is_used_by_default(server):
    Scripted.script = [(429, {"Retry-After": "0.2"}, "")]
    import time

    t0 = time.perf_counter()
    with httpx.Client() as client:
        send(client, "POST", server)
    assert 0.2 <= time.perf_counter() - t0 < 2.0


def test_retry_after_parsing():
    assert retry_after_seconds({"Retry-After": "garbage"}) == 1.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.2  # in the past: clamped
    r = Retrier(HttpPolicy(attempts=2))
    assert r.delay(200, {}) is None and r.delay(502, {}) is None  # second request was the last
