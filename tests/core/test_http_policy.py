"""The shared HTTP policy against a real loopback server that answers from a script."""

import asyncio
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from memrun.core.http_policy import HttpPolicy, Retrier, asend, retry_after_seconds, send
from memrun.errors import AuthError

RESET, TRUNCATE, HANG = 0, -1, -2  # script "statuses" that are transport faults


class Scripted(BaseHTTPRequestHandler):
    script: list[tuple[int, dict[str, str], str]] = []
    seen = 0

    def do_POST(self):  # noqa: N802
        self.handle_one()

    def do_GET(self):  # noqa: N802
        self.handle_one()

    def handle_one(self):
        type(self).seen += 1
        status, headers, body = self.script.pop(0) if self.script else (200, {}, "ok")
        if status == RESET:  # a TCP reset before any byte of the response
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if status == HANG:
            time.sleep(float(body))
            status, body = 200, "late"
        if status == TRUNCATE:  # Content-Length promises more than is sent
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"partial")
            self.close_connection = True
            return
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


EXACT = HttpPolicy(jitter=0)  # waits as nominal, so that tests can compare them


def run(url, script, policy=EXACT, method="POST", **kwargs):
    Scripted.script = list(script)
    waits: list[float] = []
    with httpx.Client(timeout=kwargs.pop("timeout", 5.0)) as client:
        try:
            response = send(client, method, url, policy=policy, sleep=waits.append, **kwargs)
        except (httpx.HTTPError, AuthError) as exc:
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
    exc, waits = run(server, [(500, {}, "boom " * 100)] * 10, HttpPolicy(attempts=3, jitter=0))
    assert isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 500
    assert Scripted.seen == 3 and waits == [0.5, 1.0]
    assert "boom" in str(exc) and len(str(exc)) < 500


def test_other_4xx_raise_at_once(server):
    exc, waits = run(server, [(400, {}, '{"error": "bad model"}')])
    assert isinstance(exc, httpx.HTTPStatusError) and "bad model" in str(exc) and waits == []


def test_rate_limit_waits_are_bounded(server):
    exc, waits = run(server, [(429, {"Retry-After": "0.3"}, "slow down")] * 10, HttpPolicy(max_rate_limit_waits=4, jitter=0))
    assert isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 429 and waits == [0.3] * 4


def test_async_send_follows_the_same_rules(server):
    Scripted.script = [(503, {}, ""), (429, {"Retry-After": "100"}, ""), (200, {}, "ok")]
    waits: list[float] = []

    async def fake_sleep(s):
        waits.append(s)

    async def go():
        async with httpx.AsyncClient() as client:
            return await asend(client, "POST", server, policy=EXACT, sleep=fake_sleep)

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
    r = Retrier(HttpPolicy(attempts=2, jitter=0))
    assert r.delay(200, {}) is None and r.delay(502, {}) is None  # second request was the last


def test_transport_errors_are_retried_from_the_same_budget(server):
    # a reset, a truncated body and a read timeout, then an answer: one call, four requests
    # (a 1.5 s timeout, so that a loaded machine answers the other requests within it)
    response, waits = run(server, [(RESET, {}, ""), (TRUNCATE, {}, ""), (HANG, {}, "4.0"), (200, {}, "done")],
                          HttpPolicy(attempts=4, jitter=0), idempotent=True, timeout=1.5)
    assert response.status_code == 200 and response.text == "done"
    assert Scripted.seen == 4 and waits == [0.5, 1.0, 2.0]
    # the budget is shared with 5xx: a 503 and two resets use up attempts=3
    exc, waits = run(server, [(503, {}, ""), (RESET, {}, ""), (RESET, {}, ""), (200, {}, "never")],
                     HttpPolicy(attempts=3, jitter=0), idempotent=True)
    assert isinstance(exc, httpx.TransportError) and waits == [0.5, 1.0]


def test_a_non_idempotent_request_is_not_resent_after_it_may_have_arrived(server):
    exc, waits = run(server, [(RESET, {}, ""), (200, {}, "twice")])  # POST: by default not idempotent
    assert isinstance(exc, httpx.TransportError) and waits == [] and Scripted.seen == 1
    response, waits = run(server, [(RESET, {}, ""), (200, {}, "once more")], method="GET")  # GET is
    assert response.text == "once more" and len(waits) == 1


def test_a_connect_error_is_retried_whatever_the_method():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exc, waits = run(f"http://127.0.0.1:{port}/x", [], HttpPolicy(attempts=3, jitter=0))
    assert isinstance(exc, httpx.ConnectError) and waits == [0.5, 1.0]


def test_408_is_retried_like_a_5xx(server):
    response, waits = run(server, [(408, {}, ""), (504, {}, ""), (200, {}, "ok")])
    assert response.status_code == 200 and waits == [0.5, 1.0]


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_raise_at_once(server, status):
    exc, waits = run(server, [(status, {}, "bad token")] * 3, auth_hint="check $MY_TOKEN")
    assert isinstance(exc, AuthError) and exc.status == status and waits == [] and Scripted.seen == 1
    assert f"HTTP {status}" in str(exc) and "bad token" in str(exc) and "check $MY_TOKEN" in str(exc)
    assert "\n" not in str(exc)


def test_retry_after_ms_is_honoured_and_preferred():
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"Retry-After-Ms": "2500", "Retry-After": "9"}) == 2.5
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "300", "retry-after": "1"})) == 0.3
    assert retry_after_seconds({"retry-after-ms": "junk", "retry-after": "4"}) == 4.0


def test_every_wait_is_jittered():
    policy = HttpPolicy()  # the default jitter
    backoffs = {Retrier(policy).delay(503, {}) for _ in range(32)}
    assert len(backoffs) > 16 and all(0.5 * 0.75 <= w <= 0.5 * 1.25 for w in backoffs)
    told = {Retrier(policy).delay(429, {"Retry-After": "3"}) for _ in range(32)}
    assert len(told) > 16 and all(3.0 <= w <= 3.0 * 1.25 for w in told)  # never earlier than asked
    transport = {Retrier(policy).transport_delay(httpx.ReadError("reset"), idempotent=True) for _ in range(32)}
    assert len(transport) > 16 and all(0.375 <= w <= 0.625 for w in transport)


def test_a_stop_ends_a_long_wait_for_the_servers_rate_at_once():
    """A run with a slow ``arm.max_rps`` ignored SIGTERM: its requests slept out the whole
    wait before the stop was seen. A stop now cancels a request that is waiting, unsent."""
    from memrun.core import signals
    from memrun.core.http_policy import RateGate

    restore = signals.install()
    try:
        async def two_requests() -> float:
            gate = RateGate(1 / 60)
            await gate.wait()  # the first goes at once; the second would wait a minute
            asyncio.get_running_loop().call_later(0.3, signals.request)
            start = time.monotonic()
            with pytest.raises(asyncio.CancelledError):
                await gate.wait()
            return time.monotonic() - start

        assert asyncio.run(two_requests()) < 2.0
    finally:
        signals._requested.clear()
        restore()


@pytest.mark.parametrize("value", [1e-9, 0.0, -1.0, float("inf")])
def test_max_rps_out_of_range_is_refused_with_the_range(value, memory, tmp_path):
    from memrun.arms.http import HttpArm
    from memrun.errors import ArmError

    _, url = memory
    with pytest.raises(ArmError, match=r"arm.max_rps=.*: give requests per second from 0.0166667 \(one a minute\) up"):
        HttpArm(base_url=url, ingest={"path": "/x"}, search={"path": "/s", "result": "hits"}, keep_namespaces=True,
                max_rps=value, ledger_dir=str(tmp_path))
