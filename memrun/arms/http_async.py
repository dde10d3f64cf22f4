"""The request path of ``arm=http`` on the event loop: aiohttp, under memrun's HTTP policy.

Why aiohttp: it is the stack the LLM client (:mod:`memrun.llm.client`) already uses, and
on a loopback server it spends a fraction of httpx's AsyncClient time per request (bench:
``bench/bench_http_arm.py``; httpx's async path cost ~14 ms a request on a loaded 2-core
machine where aiohttp cost ~2), which is memrun's overhead in every latency it records.
The arm's set-up and clean-up (health, leftovers, ``close``) go through it too, each on an
event loop of its own (:meth:`memrun.arms.http_client.ServerClient.request`).

:func:`send` applies :class:`memrun.core.http_policy.Retrier` and a server's shared
:class:`~memrun.core.http_policy.RateGate`; its errors are httpx's types, so the arm, the rows
and the ledger speak one vocabulary whichever client sent the request: a status >= 400
raises ``httpx.HTTPStatusError`` (401/403: :class:`memrun.errors.AuthError`), a failed
connection ``httpx.ConnectError``, a timeout ``httpx.ReadTimeout``, any other transport
failure ``httpx.ReadError``. With ``expect_json``, a reply of status < 400 whose body is not
JSON is :class:`memrun.errors.MalformedReply`, retried as a transport error is (when the request
is idempotent, from the same ``attempts``): one bad reply is an error of its item, not of the run.
httpx itself loads only when one of its errors is made (:mod:`memrun.lazy`): its import
(httpcore, trio, and its command line's click, rich and pygments) would otherwise come before
every run's first request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import select
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import aiohttp

from memrun.core.http_policy import (
    AUTH_STATUSES,
    BODY_PREVIEW_CHARS,
    REQUEST_LOGGER,
    HttpPolicy,
    RateGate,
    Retrier,
    auth_error,
    note_wait,
)
from memrun.core.url_secrets import redact_urls
from memrun.errors import MalformedReply
from memrun.lazy import lazy

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy("httpx")


@dataclass(frozen=True)
class _Request:
    method: str
    url: str


_UNPARSED = object()
_LOG = logging.getLogger(REQUEST_LOGGER)  # one line per request under memrun --verbose (aiohttp logs none)


@dataclass(frozen=True)
class Reply:
    """A response read in full: ``status_code``, ``headers``, ``content`` (bytes), ``request``
    (``method``, ``url``), and :meth:`json` / :attr:`text` as on an httpx response
    (``document``: the JSON already parsed, with ``expect_json``)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes
    request: _Request
    document: Any = field(default=_UNPARSED, compare=False, repr=False)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content) if self.document is _UNPARSED else self.document


def _parsed(reply: Reply) -> Reply:
    """``reply`` with its JSON parsed; raises MalformedReply when the body is not JSON."""
    try:
        return replace(reply, document=json.loads(reply.content))
    except ValueError as exc:
        preview = reply.text[:BODY_PREVIEW_CHARS].replace("\n", " ")
        raise MalformedReply(f"{reply.request.method} {reply.request.url} did not answer with JSON ({exc}): "
                             f"{preview!r}") from None


def _closed_by_peer(protocol: Any) -> bool:
    """Whether the idle pooled connection of ``protocol`` has something to read: the server's
    close (or bytes no request asked for), which the event loop has not processed yet."""
    transport = protocol.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock.fileno()], [], [], 0)[0])
    except (OSError, ValueError):  # closed under us
        return True


class _CheckedConnector(aiohttp.TCPConnector):
    """aiohttp's pool, which hands out no kept-alive connection the server has closed.

    A server closes a connection idle too long (uvicorn after 5 s); aiohttp drops it from
    its pool once the event loop has read the close, but a loop busy with other requests may
    not have yet. aiohttp then writes the request on it and reads "Server disconnected", and
    resends only GET, HEAD, PUT, DELETE, OPTIONS and TRACE (RFC 9112 9.3.1.1): a POST (an
    ingest) failed its item though the server never saw it. As urllib3 and httpcore do, a
    pooled connection that is readable before the request is written is closed and the next
    one taken (a new one when none is left); nothing was sent on it, so this holds for any method.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._handed_out: weakref.WeakSet[Any] = weakref.WeakSet()  # protocols lent before: reused if seen again

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        while True:
            connection = await super().connect(req, traces, timeout)
            protocol = connection.protocol
            if protocol not in self._handed_out:
                self._handed_out.add(protocol)
                return connection
            if not _closed_by_peer(protocol):
                return connection
            connection.close()  # discarded, not pooled again: the loop ends when the pool is empty


def open_session(headers: Mapping[str, str], timeout_s: float) -> aiohttp.ClientSession:
    """A pooled keep-alive session (no connection limit: memrun's own slots bound it) that
    lends no connection the server closed while idle (:class:`_CheckedConnector`); call
    inside the event loop it will serve."""
    return aiohttp.ClientSession(
        connector=_CheckedConnector(limit=0, ttl_dns_cache=300),
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
        headers=dict(headers),
        trust_env=False,
        skip_auto_headers=("User-Agent",),
    )


def _as_httpx(exc: BaseException, method: str, url: str) -> httpx.TransportError:
    request = httpx.Request(method, url)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(f"cannot connect to {url}: {exc}", request=request)
    if isinstance(exc, asyncio.TimeoutError):
        return httpx.ReadTimeout(f"no complete reply within the timeout from {method} {url}", request=request)
    return httpx.ReadError(f"{type(exc).__name__}: {exc}".splitlines()[0], request=request)


def _status_error(reply: Reply, auth_hint: str) -> Exception:
    method, url = reply.request.method, reply.request.url
    if reply.status_code in AUTH_STATUSES:
        return auth_error(reply.status_code, method, url, reply.text, auth_hint)
    body = reply.text[:BODY_PREVIEW_CHARS].replace("\n", " ")
    request = httpx.Request(method, url)
    return httpx.HTTPStatusError(f"HTTP {reply.status_code} from {method} {url}: {body}", request=request,
                                 response=httpx.Response(reply.status_code, content=reply.content, request=request))


async def send(session: aiohttp.ClientSession, method: str, url: str, *, policy: HttpPolicy, idempotent: bool,
               auth_hint: str, gate: RateGate | None = None, expect_json: bool = False, **kwargs: Any) -> Reply:
    """Send a request under the policy and read the whole response (see the module docstring
    for the errors raised). kwargs: aiohttp's body arguments (``json``, ``data``, ``headers``).
    expect_json: parse the reply (``Reply.document``); a body that is not JSON is retried as
    a transport error, then raised as :class:`MalformedReply`."""
    retrier = Retrier(policy)
    if "content" in kwargs:  # httpx's name for a raw body (memrun.arms.http_templates.encode_body)
        kwargs["data"] = kwargs.pop("content")
    while True:
        if gate is not None:
            await gate.wait()
        try:
            async with session.request(method, url, **kwargs) as response:
                reply = Reply(response.status, response.headers, await response.read(), _Request(method, url))
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            error = _as_httpx(exc, method, url)
            wait = retrier.transport_delay(error, idempotent)
            if wait is None:
                raise error from None
            note_wait(wait)
            await asyncio.sleep(wait)
            continue
        if _LOG.isEnabledFor(logging.INFO):
            _LOG.info('HTTP Request: %s %s "%d %s"', method, redact_urls(url), reply.status_code, response.reason)
        wait = retrier.delay(reply.status_code, reply.headers)
        if wait is None:
            if reply.status_code >= 400:
                raise _status_error(reply, auth_hint)
            if not expect_json:
                return reply
            try:
                return _parsed(reply)
            except MalformedReply as error:
                retrier.sent -= 1  # counted once, as a transport error, below
                wait = retrier.transport_delay(error, idempotent)
                if wait is None:
                    raise
                note_wait(wait)
                await asyncio.sleep(wait)
                continue
        if gate is not None and reply.status_code == 429:
            gate.pause(wait)  # every request to this server waits, this one at the gate
            continue
        note_wait(wait)
        await asyncio.sleep(wait)
