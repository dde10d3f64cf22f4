"""The chat client under the HTTP policy, against the loopback server (timed with short waits:
the waits the client chose are compared exactly, and the server's clock shows they were slept)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memrun.core.http_policy import HttpPolicy, Retrier
from memrun.errors import AuthError, EndpointUnreachable
from memrun.llm.client import CallError, ChatClient, ChatRequest, parse_completion
from memrun.llm.endpoint import Endpoint
from servers.openai_server import OpenAIServer, Reply

FAST = HttpPolicy(attempts=3, backoff_base=0.05, retry_after_default=0.15, retry_after_min=0.1, retry_after_max=0.4,
                  jitter=0)
REQUEST = ChatRequest("gpt-test", ({"role": "user", "content": "hi"},), {"temperature": 0.0})


def complete(server: OpenAIServer, policy: HttpPolicy = FAST, timeout: float = 5) -> tuple[object, list[float]]:
    """(result or CallError / AuthError, the seconds of each wait the client slept) of one call."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    async def go() -> object:
        client = ChatClient(Endpoint(server.base_url, "sk-test", key_env="MY_KEY"), policy=policy, timeout=timeout,
                            sleep=sleep)
        try:
            return await client.complete(REQUEST)
        except (CallError, AuthError) as exc:
            return exc
        finally:
            await client.close()

    return asyncio.run(go()), waits


def gaps(server: OpenAIServer) -> list[float]:
    times = [entry.t for entry in server.log]
    return [b - a for a, b in zip(times, times[1:])]


def slept(server: OpenAIServer, waits: list[float]) -> bool:
    """Each gap between the server's requests holds its wait (a wait computed but not slept
    fails), and no gap is seconds longer (no other wait; a loaded machine adds well under 2 s)."""
    return len(gaps(server)) == len(waits) and all(0.9 * w <= g < w + 2.0 for g, w in zip(gaps(server), waits))


def test_429_waits_out_retry_after(openai_server):
    openai_server.script(Reply.rate_limited(retry_after="0.3"), Reply.ok("fine"))
    result, waits = complete(openai_server)
    assert result.text == "fine"
    assert openai_server.count() == 2
    assert waits == [pytest.approx(0.3)] and slept(openai_server, waits)


def test_429_without_retry_after_waits_the_default(openai_server):
    openai_server.script(Reply.rate_limited(), Reply.ok("fine"))
    result, waits = complete(openai_server)
    assert result.text == "fine"
    assert waits == [pytest.approx(0.15)] and slept(openai_server, waits)


def test_retry_after_is_clamped(openai_server):
    openai_server.script(Reply.rate_limited(retry_after="30"), Reply.rate_limited(retry_after="0"), Reply.ok("fine"))
    result, waits = complete(openai_server)
    assert result.text == "fine"
    # 30 s clamped to retry_after_max 0.4; 0 s raised to retry_after_min 0.1
    assert waits == [pytest.approx(0.4), pytest.approx(0.1)] and slept(openai_server, waits)


def test_429_does_not_use_the_5xx_budget(openai_server):
    # attempts=3: four 429s plus two 5xx still succeed on the next request.
    openai_server.script(*[Reply.rate_limited(retry_after="0.1")] * 4, Reply.server_error(), Reply.server_error(502), Reply.ok("fine"))
    result, _ = complete(openai_server)
    assert result.text == "fine"
    assert openai_server.count() == 7


def test_5xx_backs_off_exponentially_then_raises_with_the_body(openai_server):
    openai_server.script(Reply.server_error(503), Reply.server_error(500), Reply.server_error(500))
    result, waits = complete(openai_server)
    assert isinstance(result, CallError) and result.kind == "http" and result.status == 500
    assert "upstream failed" in str(result)
    assert openai_server.count() == 3  # attempts
    assert waits == [pytest.approx(0.05), pytest.approx(0.1)] and slept(openai_server, waits)  # 0.05 x 2^0, x 2^1


def test_other_4xx_raises_at_once_with_the_start_of_the_body(openai_server):
    openai_server.script(Reply.error(400, "model 'gpt-test' does not exist " + "x" * 1000))
    result, waits = complete(openai_server)
    assert isinstance(result, CallError) and result.kind == "http" and result.status == 400 and waits == []
    assert "does not exist" in str(result) and len(str(result)) < 400
    assert openai_server.count() == 1


def test_context_length_error_is_context_overflow(openai_server):
    openai_server.script(Reply.error(400, "This model's maximum context length is 8192 tokens", "context_length_exceeded"))
    result, _ = complete(openai_server)
    assert isinstance(result, CallError) and result.kind == "context_overflow"


@pytest.mark.parametrize(
    ("reply", "needle"),
    [(Reply.malformed(), "not JSON"), (Reply.no_choices(), "no choices"), (Reply(200, {"choices": [{"message": {"content": None}}]}), "not text")],
)
def test_malformed_replies_are_errors(openai_server, reply, needle):
    openai_server.script(reply)
    result, _ = complete(openai_server)
    assert isinstance(result, CallError) and result.kind == "malformed" and needle in str(result)


def test_tokens_are_what_the_api_reported_or_none(openai_server):
    openai_server.usage = (123, 7)
    result, _ = complete(openai_server)
    assert (result.prompt_tokens, result.completion_tokens) == (123, 7)
    openai_server.usage = (None, None)
    result, _ = complete(openai_server)
    assert (result.prompt_tokens, result.completion_tokens) == (None, None)


def _error_of(base_url: str, kind: type[Exception], before: Any = None, calls: int = 1) -> Any:
    """The ``kind`` error ``calls`` requests to ``base_url`` end in (``before()`` runs after
    the first of them); AssertionError when none is raised."""

    async def go() -> Any:
        client = ChatClient(Endpoint(base_url, "sk-test"), policy=FAST, timeout=5)
        try:
            for n in range(calls):
                if n == 1 and before is not None:
                    before()
                await client.complete(REQUEST)
        except kind as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError("no error")

    return asyncio.run(go())


def test_an_endpoint_that_never_answered_is_unreachable():
    server = OpenAIServer().start()
    server.stop()  # nothing listens on the port any more
    error = _error_of(server.base_url, EndpointUnreachable)
    assert str(error).startswith(f"cannot connect to {server.base_url} (nothing answers there; is the server running?)")
    assert "run stops" in str(error) and "base URL" in str(error)


def test_a_host_name_that_does_not_resolve_is_named_so():
    error = _error_of("http://no-such-host.invalid/v1", EndpointUnreachable)  # .invalid never resolves (RFC 2606)
    assert str(error).startswith("cannot connect to http://no-such-host.invalid/v1 (its host name does not resolve")


def test_an_endpoint_that_answered_before_fails_one_call():
    server = OpenAIServer().start()
    error = _error_of(server.base_url, CallError, before=server.stop, calls=2)  # answered once, then gone
    assert error.kind == "transport"  # the item's error; the run goes on (the server may come back)


def test_default_policy_delays_without_sleeping():
    r = Retrier(HttpPolicy(jitter=0))  # the documented defaults, without jitter
    assert r.delay(429, {}) == 1.0
    assert r.delay(429, {"retry-after": "0"}) == 0.2
    assert r.delay(429, {"retry-after": "600"}) == 60.0
    assert r.delay(429, {"retry-after": "2.5"}) == 2.5
    assert [r.delay(500, {}), r.delay(502, {}), r.delay(503, {})] == [0.5, 1.0, 2.0]
    assert r.delay(500, {}) is None  # the 4th request was the last of attempts=4
    assert Retrier().delay(404, {}) is None and Retrier().delay(401, {}) is None
    assert Retrier().delay(200, {}) is None


def test_parse_completion_rejects_non_integer_usage():
    result = parse_completion(b'{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":"12","completion_tokens":true}}', 1.0)
    assert result.text == "x" and result.prompt_tokens is None and result.completion_tokens is None


def test_parse_completion_reads_what_only_json_reads():
    """orjson reads replies; the JSON it refuses that Python's json reads (a NaN, an
    integer past 64 bits) is read as before, and what neither reads is json's error."""
    result = parse_completion(b'{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":'
                              b'123456789012345678901234567890,"completion_tokens":NaN}}', 1.0)
    assert result.prompt_tokens == 123456789012345678901234567890 and result.completion_tokens is None
    with pytest.raises(CallError, match="not JSON \\(Expecting value: line 1 column 1"):
        parse_completion(b"<html>busy</html>", 1.0)


def test_a_request_body_is_json_of_the_request_whatever_its_text():
    from memrun.llm.client import request_body

    params = {"temperature": 0.0, "max_tokens": 256}
    for text in ("Où est l'item 7 ? \u2014 bin 25", "a lone surrogate \ud800 from a damaged file"):
        body = request_body(ChatRequest("m", ({"role": "user", "content": text},), params))
        assert json.loads(body) == {"model": "m", "messages": [{"role": "user", "content": text}], **params}


def test_resets_truncated_replies_and_timeouts_are_retried(openai_server):
    # the timeout is 1.5 s so that a loaded machine answers the other requests within it
    openai_server.script(Reply.reset(), Reply.truncated(), Reply.ok("late", delay=4.0), Reply.ok("fine"))
    result, waits = complete(openai_server, HttpPolicy(attempts=4, backoff_base=0.01, jitter=0), timeout=1.5)
    assert result.text == "fine" and openai_server.count() == 4 and len(waits) == 3


def test_transport_errors_give_up_after_attempts(openai_server):
    openai_server.script(*[Reply.reset()] * 5)
    result, _ = complete(openai_server)  # attempts=3
    assert isinstance(result, CallError) and result.kind == "transport" and openai_server.count() == 3


@pytest.mark.parametrize("status", [401, 403])
def test_an_auth_failure_raises_auth_error_at_once(openai_server, status):
    openai_server.script(Reply.error(status, "Incorrect API key provided"), Reply.ok("never"))
    result, _ = complete(openai_server)
    assert isinstance(result, AuthError) and openai_server.count() == 1
    assert f"HTTP {status}" in str(result) and "Incorrect API key" in str(result) and "$MY_KEY" in str(result)


def test_a_request_sent_again_sends_the_same_bytes(openai_server):
    """A request's body goes out as one payload object, built once for all its calls (its
    repeats, its retries): each call still sends the JSON body with its own Content-Type and
    Content-Length, as the first did."""
    openai_server.script(Reply.ok("a"), Reply.server_error(), Reply.ok("b"), Reply.ok("c"))
    request = ChatRequest("gpt-test", ({"role": "user", "content": "Où est l'item 7 ?"},), {"temperature": 0.0})

    async def go() -> list[str]:
        client = ChatClient(Endpoint(openai_server.base_url, "sk-test"), policy=FAST, timeout=5)
        try:
            return [(await client.complete(request)).text for _ in range(3)]
        finally:
            await client.close()

    assert asyncio.run(go()) == ["a", "b", "c"]  # the second call was sent twice (a 500, then its retry)
    assert request.payload is request.payload
    sent = [entry for entry in openai_server.log if entry.path == "/v1/chat/completions"]
    assert len(sent) == 4
    for entry in sent:
        assert entry.body == {"model": "gpt-test", "messages": [{"role": "user", "content": "Où est l'item 7 ?"}],
                              "temperature": 0.0}
        assert entry.headers["content-type"] == "application/json"
        assert entry.headers["content-length"] == str(len(request.body))
        assert entry.headers["authorization"] == "Bearer sk-test"
    assert len({tuple(sorted(entry.headers.items())) for entry in sent}) == 1
