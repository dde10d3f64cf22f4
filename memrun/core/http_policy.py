"""One HTTP policy for every call memrun makes: the LLM reader and judges (through the
``openai`` SDK), the OpenAI-compatible embedder and the memory servers of ``arm=http``.

| response                  | policy                                                        |
|---------------------------|---------------------------------------------------------------|
| 2xx / 3xx                 | returned                                                      |
| 429                       | wait out ``retry-after-ms`` or ``Retry-After`` (1 s when      |
|                           | absent or unparseable, clamped to 0.2-60 s) and retry; waits  |
|                           | do not use the retry budget, but at most                      |
|                           | ``max_rate_limit_waits`` of them                              |
| 408, 5xx                  | retry after 0.5 x 2^n s (n = 0, 1, ...) until ``attempts``    |
|                           | requests were sent                                            |
| transport error           | (connection refused or reset, truncated body, timeout) retried |
|                           | like a 5xx, from the same budget, when the request is         |
|                           | idempotent or was never sent (connect errors); else raised    |
| 401 / 403                 | raise :class:`memrun.errors.AuthError` at once: every later   |
|                           | call would fail the same way, so the run stops                |
| other >= 400, or the last | raise :class:`httpx.HTTPStatusError` with the start of the    |
| 429 / 408 / 5xx           | body                                                          |

Every wait is jittered (``jitter``, a fraction): backoffs are drawn from
``[1 - jitter, 1 + jitter]`` times their nominal value and a server's ``Retry-After``
from ``[1, 1 + jitter]`` times it (never earlier than asked), so that the calls in
flight when a server stumbles do not all come back at the same instant.

Under concurrency (``arm.concurrency``) the requests of one server share a :class:`RateGate`:
a 429 closes the gate for its ``Retry-After`` so that every request in flight to that
server waits, not just the one that got it, and an optional cap (``arm.max_rps``) spaces
the requests. Every wait (gate, 429, backoff) is added to :data:`WAITED` when a caller has
set it, so that a latency measured around the call can leave the waits out.

Callers record a raised error on the item (``error`` column): errors are excluded from
ratios and counted, never scored as misses. :class:`Retrier` holds the decisions, so
that a client with its own transport (the ``openai`` SDK) applies the same rules;
:func:`send` / :func:`asend` apply them to an ``httpx`` client.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from memrun.core import signals
from memrun.errors import AuthError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy("httpx")

BODY_PREVIEW_CHARS = 300
RETRY_STATUSES = frozenset({408})  # besides every 5xx
AUTH_STATUSES = frozenset({401, 403})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
# Raised before the request left this machine: safe to retry whatever the method.


def _not_sent() -> tuple[type[BaseException], ...]:
    """httpx's errors raised before a request reached the server (retried even when not
    idempotent). httpx loads at its first use (:mod:`memrun.lazy`): the accuracy axis's chat
    client (aiohttp) uses this module, and a cached re-run loads neither."""
    return (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class HttpPolicy:
    """Retry settings (seconds). ``attempts`` counts requests sent, the first included;
    ``jitter`` is the fraction by which every wait is spread (0: exact waits)."""

    attempts: int = 4
    backoff_base: float = 0.5
    retry_after_default: float = 1.0
    retry_after_min: float = 0.2
    retry_after_max: float = 60.0
    max_rate_limit_waits: int = 30
    jitter: float = 0.25


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """``name``'s value in ``headers``, any case (httpx headers are case-insensitive; dicts are not)."""
    value = headers.get(name)
    if value is None:  # a plain dict: look again ignoring case (httpx's and aiohttp's headers already do)
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def retry_after_seconds(headers: Mapping[str, str], policy: HttpPolicy = HttpPolicy()) -> float:
    """Seconds to wait after a 429, before jitter: ``retry-after-ms`` (milliseconds, as
    OpenAI sends it) when present, else ``Retry-After`` as seconds or an HTTP date;
    ``retry_after_default`` when neither parses; clamped to the policy's bounds."""
    seconds: float | None = None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000.0
        except ValueError:
            seconds = None
    value = _header(headers, "retry-after")
    if seconds is None and value is not None:
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None
    if seconds is None or seconds != seconds:  # absent, unparseable or NaN
        seconds = policy.retry_after_default
    return min(max(seconds, policy.retry_after_min), policy.retry_after_max)


def is_retryable_status(status: int) -> bool:
    """True for the statuses retried with backoff: 408 and every 5xx."""
    return status >= 500 or status in RETRY_STATUSES


class Retrier:
    """Decides, outcome by outcome, whether to retry and after how long.

    ``delay(status, headers)`` (a response) and ``transport_delay(exc, idempotent)`` (a
    transport error) return None to stop (the outcome is final: return a < 400
    response, raise otherwise) or the seconds to sleep before the next request.
    One Retrier serves one logical call. rand: a source of floats in [0, 1) for jitter.
    """

    def __init__(self, policy: HttpPolicy = HttpPolicy(), rand: Callable[[], float] = random.random) -> None:
        self.policy = policy
        self.rand = rand
        self.sent = 0
        self.rate_limit_waits = 0
        self.server_errors = 0
        self.transport_errors = 0

    def _backoff(self) -> float:
        n = self.server_errors + self.transport_errors
        spread = self.policy.jitter * (2.0 * self.rand() - 1.0)
        return self.policy.backoff_base * 2**n * (1.0 + spread)

    def delay(self, status: int, headers: Mapping[str, str]) -> float | None:
        """Seconds to wait before retrying a response with ``status``, or None (final)."""
        self.sent += 1
        if status == 429:
            if self.rate_limit_waits >= self.policy.max_rate_limit_waits:
                return None
            self.rate_limit_waits += 1
            self.sent -= 1  # a 429 does not use the retry budget
            return retry_after_seconds(headers, self.policy) * (1.0 + self.policy.jitter * self.rand())
        if is_retryable_status(status):
            if self.sent >= self.policy.attempts:
                return None
            wait = self._backoff()
            self.server_errors += 1
            return wait
        return None

    def transport_delay(self, exc: BaseException, idempotent: bool) -> float | None:
        """Seconds to wait before retrying after transport error ``exc``, or None (raise it).

        Retried from the same budget as a 5xx when ``idempotent`` or when ``exc`` is a
        connect error (:func:`_not_sent`: the server never saw the request).
        """
        self.sent += 1
        if not (idempotent or isinstance(exc, _not_sent())) or self.sent >= self.policy.attempts:
            return None
        wait = self._backoff()
        self.transport_errors += 1
        return wait


def auth_error(status: int, method: str, url: str, body: str, hint: str) -> AuthError:
    """The one-line :class:`AuthError` for a 401/403 from ``method url`` (``hint``: what to check)."""
    detail = " ".join(body[:BODY_PREVIEW_CHARS].split())
    return AuthError(f"HTTP {status} from {method} {url}{f': {detail}' if detail else ''}; {hint} "
                     "(every later call would be refused too, so the run stops)", status=status)


def raise_for_status(response: httpx.Response, auth_hint: str = "check the credentials") -> httpx.Response:
    """Return a < 400 response; raise AuthError for 401/403, HTTPStatusError with the body's start otherwise."""
    if response.status_code >= 400:
        request = response.request
        if response.status_code in AUTH_STATUSES:
            raise auth_error(response.status_code, request.method, str(request.url), response.text, auth_hint)
        body = response.text[:BODY_PREVIEW_CHARS].replace("\n", " ")
        raise httpx.HTTPStatusError(
            f"HTTP {response.status_code} from {request.method} {request.url}: {body}",
            request=request,
            response=response,
        )
    return response


WAITED: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("memrun_waited", default=None)
"""Seconds a call spent waiting rather than talking to the server (429 waits, backoffs, the
gate): :func:`asend` appends to the list a caller set here (:mod:`memrun.pipeline.many_histories`)."""


def note_wait(seconds: float) -> None:
    """Add ``seconds`` to the waits of the current call (:data:`WAITED`), when a caller measures them."""
    waits = WAITED.get()
    if waits is not None:
        waits.append(seconds)


STOP_POLL_S = 0.25  # how often a long wait looks for a stop


class RateGate:
    """What every request in flight to one server waits on (asyncio, one event loop).

    ``pause(seconds)``: a 429 said to wait; no request is sent before then. ``max_rps``:
    requests are started at most that many per second (None: no cap). Not thread-safe.
    """

    def __init__(self, max_rps: float | None = None) -> None:
        if max_rps is not None and not max_rps > 0:
            raise ValueError(f"max_rps={max_rps}: must be a positive number of requests per second")
        self.interval = 0.0 if max_rps is None else 1.0 / max_rps
        self._open_at = 0.0  # monotonic time before which no request starts (a 429's Retry-After)
        self._next = 0.0  # monotonic time of the next free start under max_rps

    def pause(self, seconds: float) -> None:
        """Hold every request until ``seconds`` from now (a longer pause already set wins)."""
        self._open_at = max(self._open_at, time.monotonic() + seconds)

    async def wait(self) -> None:
        """Return when a request may be sent (at once when the gate is open and uncapped).
        Raises asyncio.CancelledError when a stop is asked for (Ctrl-C, SIGTERM:
        :mod:`memrun.core.signals`) while it waits: a request not sent yet is never sent then."""
        while True:
            delay = max(self._open_at, self._next) - time.monotonic()
            if delay <= 0:
                break
            note_wait(min(delay, STOP_POLL_S))
            await asyncio.sleep(min(delay, STOP_POLL_S))
            if signals.requested():
                raise asyncio.CancelledError("a stop was asked for while the request waited for the server's rate")
        if self.interval:  # claim the next start
            self._next = max(time.monotonic(), self._next) + self.interval


def _idempotent(method: str, idempotent: bool | None) -> bool:
    return method.upper() in IDEMPOTENT_METHODS if idempotent is None else idempotent


def send(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    policy: HttpPolicy = HttpPolicy(),
    idempotent: bool | None = None,
    auth_hint: str = "check the credentials",
    sleep: Callable[[float], None] = time.sleep,
    **kwargs: Any,
) -> httpx.Response:
    """Send a request under the policy (blocking); the response is read in full.

    idempotent: whether a transport error may be retried (None: by ``method``; POST
    is not). auth_hint: what the AuthError for a 401/403 tells the user to check.
    Raises AuthError, httpx.HTTPStatusError, or the last httpx.TransportError.
    """
    retrier = Retrier(policy)
    while True:
        try:
            response = client.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            wait = retrier.transport_delay(exc, _idempotent(method, idempotent))
            if wait is None:
                raise
            sleep(wait)
            continue
        wait = retrier.delay(response.status_code, response.headers)
        if wait is None:
            return raise_for_status(response, auth_hint)
        response.close()
        sleep(wait)


async def asend(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    policy: HttpPolicy = HttpPolicy(),
    idempotent: bool | None = None,
    auth_hint: str = "check the credentials",
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    **kwargs: Any,
) -> httpx.Response:
    """:func:`send` for asyncio (same arguments, same errors). ``arm=http`` sends with aiohttp
    instead (:func:`memrun.arms.http_async.send`, which also takes a :class:`RateGate`)."""
    retrier = Retrier(policy)
    while True:
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            wait = retrier.transport_delay(exc, _idempotent(method, idempotent))
            if wait is None:
                raise
            await sleep(wait)
            continue
        wait = retrier.delay(response.status_code, response.headers)
        if wait is None:
            return raise_for_status(response, auth_hint)
        await response.aclose()
        await sleep(wait)


# Loggers of the HTTP stacks memrun drives (its own clients, the MCP SDK's): at INFO httpx
# logs one "HTTP Request" line per call, thousands in a run.
REQUEST_LOGGER = "memrun.http"  # the request lines of memrun's own aiohttp clients (aiohttp logs none)
HTTP_LOGGERS = ("httpx", "httpcore", "httpx2", "openai", "aiohttp", "mcp", REQUEST_LOGGER)
VERBOSE_ENV = "MEMRUN_VERBOSE"  # set by ``memrun --verbose`` (inherited by a sweep's worker processes)


_VERBOSE_HANDLER = logging.StreamHandler()  # stderr: results keep stdout to themselves
_VERBOSE_HANDLER.setFormatter(logging.Formatter("%(name)s: %(message)s"))


def http_client_logging() -> None:
    """HTTP client logging off (WARNING) unless ``memrun --verbose`` asked for it: then INFO,
    on stderr. Called where a client is made, and by each job after Hydra's logging config
    (which disables loggers made before it)."""
    verbose = os.environ.get(VERBOSE_ENV) == "1"
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO if verbose else logging.WARNING)
        if verbose:
            logger.disabled, logger.propagate = False, False
            if _VERBOSE_HANDLER not in logger.handlers:
                logger.addHandler(_VERBOSE_HANDLER)
