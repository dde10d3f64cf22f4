"""An OpenAI-compatible chat client under memrun's HTTP policy.

Requests go straight to ``POST <base_url>/chat/completions`` over one ``aiohttp``
session per endpoint (keep-alive connections, no connection cap: the run's concurrency
bounds the calls in flight; proxies from the environment as the SDK honours them). The
``openai`` SDK's request path spent ~3.5 ms of CPU per call building and sending a
request (its request model, URL parsing, SSL contexts for plain-http endpoints), which
capped one event loop near 280 calls/s; this path spends a fraction of that, and
``aiohttp`` is imported only when the first call misses the cache.

Every retry decision is :class:`memrun.core.http_policy.Retrier`'s (429: wait out Retry-After
without using the retry budget; 408, 5xx and transport errors: jittered 0.5 x 2^n s
backoff up to ``attempts``; 401/403: :class:`memrun.errors.AuthError`, which stops the
run; other >= 400: raise with the body's start). When nothing answers at an endpoint
that has not answered once (connection refused or unknown host, after the retries; no
reply within the timeout, at once: each retry would wait as long again), the
call raises :class:`memrun.errors.EndpointUnreachable`, which stops the run too: a
wrong base URL would otherwise fail every item, each after its own retries (an endpoint
whose first calls all fail alike in another way: :mod:`memrun.llm.first_calls`). Errors reach the caller as
:class:`CallError` with a one-line message; the caller records them on the item, where
they are counted and excluded from ratios.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memrun import __version__
from memrun.core.http_policy import AUTH_STATUSES, BODY_PREVIEW_CHARS, HttpPolicy, Retrier, auth_error, http_client_logging
from memrun.core.redaction import Redactor
from memrun.core.url_join import join_url
from memrun.errors import AuthError, CallError, EndpointUnreachable
from memrun.lazy import lazy, loaded
from memrun.llm.deadlines import Deadlines
from memrun.llm.endpoint import Endpoint
from memrun.llm.first_calls import url_source

if TYPE_CHECKING:
    from urllib import request as urllib_request

    import aiohttp
    import orjson
else:
    aiohttp = lazy("aiohttp")  # loaded by the first client that sends (memrun.lazy)
    orjson = lazy("orjson")  # request bodies and replies: a run answered from the cache never loads it
    urllib_request = lazy("urllib.request")

Message = Mapping[str, str]

http_client_logging()  # one line per request at INFO otherwise: off unless memrun --verbose


def _aiohttp() -> Any:
    """The ``aiohttp`` module, imported on first use: a run whose every call is cached,
    and every process that only reads requests and replies, never loads it."""
    return loaded(aiohttp)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion: model, messages (``{"role", "content"}``), parameters."""

    model: str
    messages: tuple[Message, ...]
    params: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def digest(self) -> bytes:
        """sha256 (32 bytes) of everything in the request that determines the reply.

        The model and the parameters (sorted by name, values as ``repr``), then every
        message's fields in name order, each name and value length-prefixed, so no two
        different requests hash the same bytes. Prompts are hashed as they are: JSON-
        escaping them first cost more than anything else a cached re-run does per call.
        Computed once per request; a reader's request serves every repeat of an item.
        """
        parts = [repr((self.model, sorted(self.params.items()))).encode()]
        for message in self.messages:
            parts.append(b"\x1e%d" % len(message))
            for name, value in sorted(message.items()):
                key, text = name.encode(), str(value).encode()
                parts += (b"\x1f%d:" % len(key), key, b"\x1f%d:" % len(text), text)
        return hashlib.sha256(b"".join(parts)).digest()  # one update: ~5 us less a message than one a part

    @cached_property
    def body(self) -> bytes:
        """The JSON body that asks this request (:func:`request_body`), encoded once: a reader's
        request is sent for every repeat of its item, and a judge's request serves each repeat
        whose answer is the same."""
        return request_body(self)

    @cached_property
    def payload(self) -> Any:
        """:attr:`body` as ``aiohttp``'s ``BytesPayload``, built once and sent by every call of this
        request (its repeats, its retries): aiohttp wraps ``bytes`` given as ``data`` in a new
        payload each request (~4 us: its registry lookup, a header multidict), and a bytes
        payload is made to be sent again (aiohttp writes its bytes and never consumes them).
        Its own ``Content-Type`` header is never sent: the session's (application/json) wins."""
        return _aiohttp().payload.BytesPayload(self.body)

    call_keys: dict[tuple[str, int], str] = field(default_factory=dict, init=False, repr=False, compare=False)
    """The keys :func:`memrun.llm.cache.call_key` computed for this request, by (endpoint URL,
    repeat): a call's key is looked up when its reply is read ahead, when the judge's request
    is built from it and when the call is made, and hashed only the first time. A field, not
    a ``cached_property``: its first read (each request's) ran ~1 us of Python under a lock."""


@dataclass(slots=True)
class ChatResult:
    """A reply. Token counts are what the API reported (None when it reported nothing).

    latency_ms: wall time of the request that succeeded (waits before retries excluded).
    Treated as immutable (replaced, never changed: :func:`dataclasses.replace`) but not
    frozen: a frozen dataclass's ``__init__`` sets each of its six fields through
    ``object.__setattr__`` (~1.3 us against ~0.3 us), and one is made for every call and
    every reply a cached re-run reads (12,000 in the bench's).
    """

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    finish_reason: str | None = None
    model: str | None = None  # the model the server says answered (its reply's ``model``), None when absent


@cache
def _orjson() -> Any:
    """The ``orjson`` module, imported at its first use (a run answered from the cache never
    loads it) and then read directly: each attribute read through the :func:`memrun.lazy.lazy`
    stand-in costs ~1 us (a failed lookup, then its ``__getattr__``), two of them every call."""
    return loaded(orjson)


def _body_start(body: str) -> str:
    return " ".join(body[:BODY_PREVIEW_CHARS].split())


def _is_overflow(body: str) -> bool:
    """True when a 400's body says the prompt is longer than the model's window."""
    text = body.lower()
    code = ""
    try:
        error = json.loads(body).get("error")
        code = str(error.get("code") or "") if isinstance(error, dict) else ""
    except (ValueError, AttributeError):
        pass
    return code == "context_length_exceeded" or "context_length_exceeded" in text or "maximum context length" in text


class ChatClient:
    """Chat completions against one :class:`Endpoint` (one ``aiohttp`` session, opened at
    the first request). timeout: seconds per request. sleep: injectable for tests."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        policy: HttpPolicy = HttpPolicy(),
        timeout: float = 120.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.policy = policy
        self.timeout = timeout
        self._sleep = sleep
        self._aiohttp = _aiohttp()
        self._url = join_url(endpoint.base_url, "chat/completions")  # the root's query (?api-version=) too
        # Sent with every request as the session's own headers: given per request, aiohttp
        # merged them into the session's afresh each time, and skipping its User-Agent took
        # its slow path; ~10 us of CPU a call (3% of the client's), none of it needed.
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": f"memrun/{__version__}"}
        if endpoint.api_key:  # a keyless local server (api_key_env null) gets no Authorization header
            self._headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self._session: Any = None
        self._deadlines = Deadlines(timeout)
        self._proxy = _proxy_for(self._url)
        self.rate_limit_waits = 0
        self.server_error_retries = 0
        self.transport_retries = 0
        self.answered = False  # any reply (even an HTTP error) came from the endpoint

    def _open(self) -> Any:
        """The session, made inside the running event loop (aiohttp binds it to the loop)."""
        if self._session is None:
            aiohttp = self._aiohttp
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                cookie_jar=aiohttp.DummyCookieJar(),  # an API sets no cookies worth keeping; skips the jar per request
                timeout=aiohttp.ClientTimeout(),  # none: self._deadlines times requests (memrun.llm.deadlines)
                # trust_env would read ~/.netrc on a thread for every request (~1 ms of
                # CPU each); the proxy from the environment is looked up once instead.
                trust_env=False,
                headers=self._headers,
            )
        return self._session

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send ``request`` under the policy. Raises :class:`CallError` for a failed call and
        :class:`memrun.errors.AuthError` when the server refuses the key (401/403)."""
        retrier: Retrier | None = None  # made at the first failed attempt: most calls never need one
        aiohttp = self._aiohttp
        session = self._open()
        body = request.payload
        deadlines, task = self._deadlines, asyncio.current_task()
        while True:
            t0 = time.perf_counter()
            cancelling = deadlines.start(task)
            try:
                try:
                    async with session.post(self._url, data=body, proxy=self._proxy) as response:
                        status = response.status
                        self.answered = True
                        raw = await response.read()
                        headers = response.headers
                except asyncio.CancelledError:
                    if deadlines.expired(task, cancelling):  # no reply within the timeout
                        raise asyncio.TimeoutError from None
                    raise
                finally:
                    deadlines.stop(task)
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:  # resets, truncated bodies, timeouts
                # A chat completion changes nothing on the server: safe to send again.
                retrier = retrier or Retrier(self.policy)
                silent = not self.answered and isinstance(exc, asyncio.TimeoutError)  # not one reply yet, from any call
                wait = None if silent else retrier.transport_delay(exc, idempotent=True)  # another wait as long: no
                if wait is None:
                    message = _transport_message(exc, self.endpoint.public_url)
                    if silent or (not self.answered and _unreachable(exc)):
                        # every attempt failed to connect, or got no reply at all: so would every later call
                        raise EndpointUnreachable(f"{message}; no call to it has succeeded in this run, so the run "
                                                  f"stops here: check the base URL ({url_source(self.endpoint)}) "
                                                  "and that the server is up"
                                                  + ("" if _unreachable(exc) else ", or raise request_timeout_s")) from None
                    raise CallError("transport", message) from None
                self.transport_retries += 1
                await self._sleep(wait)
                continue
            if status >= 400:
                text = raw.decode("utf-8", "replace")
                retrier = retrier or Retrier(self.policy)
                wait = retrier.delay(status, headers)
                if wait is None:
                    if status in AUTH_STATUSES:
                        raise self._auth_error(status, text) from None
                    kind = "context_overflow" if status == 400 and _is_overflow(text) else "http"
                    raise CallError(kind, f"HTTP {status}: {_body_start(text)}", status) from None
                if status == 429:
                    self.rate_limit_waits += 1
                else:
                    self.server_error_retries += 1
                await self._sleep(wait)
                continue
            latency = (time.perf_counter() - t0) * 1000.0
            return parse_completion(raw, latency)

    def _auth_error(self, status: int, body: str) -> AuthError:
        if not self.endpoint.api_key:  # api_key_env null
            return auth_error(status, "POST", f"{self.endpoint.public_url}/chat/completions", _body_start(body),
                              "the server wants a key and api_key_env is null: set api_key_env to the variable "
                              "holding it")
        key = f"the key in ${self.endpoint.key_env}" if self.endpoint.key_env else "the API key"
        text = Redactor([self.endpoint.api_key]).text(_body_start(body))  # a gateway may echo the key
        return auth_error(status, "POST", f"{self.endpoint.public_url}/chat/completions", text,
                          f"the server refused {key}; check it and the model's access")

    async def close(self) -> None:
        self._deadlines.close()
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, minus ``NO_PROXY``), as the SDK honoured them; None for none."""
    parts = urlsplit(url)
    proxies = urllib_request.getproxies_environment()
    # typeshed does not declare proxy_bypass_environment (CPython's, undocumented; what getproxies' users call)
    if not proxies or urllib_request.proxy_bypass_environment(parts.hostname or "", proxies):  # type: ignore[attr-defined]
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def _unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says no connection could be made (refused, unknown host), as
    opposed to a connection that broke or timed out once made."""
    return type(exc).__name__ in ("ClientConnectorError", "ClientConnectorDNSError") or "Cannot connect to host" in str(exc)


def _transport_message(exc: BaseException, url: str) -> str:
    """One line for a failed connection."""
    if type(exc).__name__ == "ClientConnectorDNSError":
        return f"cannot connect to {url} (its host name does not resolve; check the URL)"
    if _unreachable(exc):
        return f"cannot connect to {url} (nothing answers there; is the server running?)"
    if isinstance(exc, asyncio.TimeoutError):
        return f"TimeoutError: no complete reply within the request timeout ({url})"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def request_body(request: ChatRequest) -> bytes:
    """The JSON body (UTF-8) that asks ``request``: model, messages, then its parameters.

    Encoded by ``orjson``: ``json.dumps`` took ~20 us for a 1.5 kB prompt, ~170 us for
    20 kB and ~1 ms for 100 kB (a full-context reader's), every call; orjson 5, 21 and 160 us.
    What orjson refuses (a lone surrogate in a prompt, an integer past 64 bits) is encoded
    by ``json.dumps`` as before.
    """
    payload = {"model": request.model, "messages": [dict(m) for m in request.messages], **dict(request.params)}
    try:
        return _orjson().dumps(payload)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(payload).encode()


def parse_completion(raw: bytes, latency_ms: float) -> ChatResult:
    """Read a chat.completion JSON body. Raises CallError(``malformed``) when it is not
    JSON or has no ``choices[0].message.content`` string; usage counts that are not
    integers are None (never estimated). Decoded by ``orjson`` (~5 us less than
    ``json.loads`` a reply); what it refuses is read by ``json.loads``, whose error is reported."""
    try:
        reply = _orjson().loads(raw)
    except ValueError:  # orjson.JSONDecodeError: not JSON, or what only json reads (NaN; orjson reads an integer past 64 bits as a float)
        try:
            reply = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            preview = raw[:80].decode("utf-8", "replace")
            raise CallError("malformed", f"unreadable reply: not JSON ({exc}): {preview!r}") from None
    choices = reply.get("choices") if type(reply) is dict else None
    choice = choices[0] if type(choices) is list and choices else None
    if type(choice) is not dict:
        raise CallError("malformed", "unreadable reply: no choices")
    message = choice.get("message")
    text = message.get("content") if type(message) is dict else None
    if type(text) is not str:
        raise CallError("malformed", "unreadable reply: choices[0].message.content is not text")
    usage = reply.get("usage")
    prompt_tokens = completion_tokens = None
    if type(usage) is dict:  # a count that is not an integer (a string, a bool, a float) is None
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        prompt_tokens = prompt_tokens if type(prompt_tokens) is int else None
        completion_tokens = completion_tokens if type(completion_tokens) is int else None
    model = reply.get("model")
    return ChatResult(text, prompt_tokens, completion_tokens, latency_ms, choice.get("finish_reason"),
                      model if type(model) is str else None)
