"""How ``arm=http`` sends one configured operation to its server and reads the answer.

A :class:`ServerClient` holds what every request to the server shares: the base URL, the
headers (the token among them), the HTTP policy (429 waits; 408, 5xx and, for idempotent
operations, transport errors retried: :mod:`memrun.core.http_policy`), one pooled keep-alive
aiohttp session per event loop (:mod:`memrun.arms.http_async`) and the server's
:class:`~memrun.core.http_policy.RateGate` (a 429 holds every request in flight to it;
``max_rps`` caps the rate). Every request goes through aiohttp: those of the run's event
loop (ingest, search, release) over its pooled session, those of plain code (set-up:
leftovers, health; ``close``) each on an event loop and a session of its own
(:func:`memrun.core.background.run_blocking`), so that namespaces are erased even after
the run's loop was cancelled. One HTTP stack means a run loads no second one (httpx and
what it imports: ~0.1 s before the first request).

Per request only what differs is done: the operation's templates were compiled once
(:class:`~memrun.arms.http_templates.Operation`), and a rendered path is joined to the base
URL once per distinct path (a history's searches share one).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memrun.arms import http_async
from memrun.arms.http_templates import Operation, encode_body
from memrun.core.background import run_blocking
from memrun.core.http_policy import HttpPolicy, RateGate, http_client_logging
from memrun.core.redaction import Redactor
from memrun.core.url_join import join_url
from memrun.core.url_secrets import redact_urls
from memrun.errors import ArmError, AuthError

http_client_logging()  # one line per request at INFO otherwise: off unless memrun --verbose


@functools.lru_cache(maxsize=4096)
def _join(base: str, path: str) -> str:
    """:func:`memrun.core.url_join.join_url`, remembered: a history's searches all go to one path."""
    return join_url(base, path)


class ServerClient:
    """The request path to one memory server (module docstring).

    base_url: the server's root; its query (``?api_key=...``) is sent with every request
    (:func:`memrun.core.url_join.join_url`). headers: sent with every request (the token included).
    timeout_s, attempts: per request. max_rps: the rate cap (None: none). auth_hint: what
    a 401/403 error tells the user to check. redactor: hides the token in errors.
    """

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout_s: float, attempts: int,
                 max_rps: float | None, auth_hint: str, redactor: Redactor) -> None:
        parts = urlsplit(base_url)
        self.base_url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/"))
        self.public_url = redact_urls(self.base_url)  # for messages and the ledger
        self.policy = dataclasses.replace(HttpPolicy(), attempts=attempts)
        self.auth_hint, self.max_rps = auth_hint, max_rps
        self._redactor = redactor
        self._headers, self._timeout = dict(headers), timeout_s
        self._session: Any = None  # the aiohttp session, bound to the event loop it was made on
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gate = RateGate(max_rps)

    def render(self, op: Operation, context: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The URL and the body arguments of ``op`` for ``context``."""
        url = _join(self.base_url, str(op.path.render(**context)))
        return url, encode_body(op.body.render(**context) if op.body else None, op.encoding, f"arm.{op.name}")

    def _auth_failed(self, op: Operation, exc: AuthError) -> ArmError:
        return ArmError(self._redactor.text(f"arm.{op.name}: the memory server answered {exc}"))  # it may echo the token

    def request(self, op: Operation, **context: Any) -> http_async.Reply:
        """Send ``op`` under the HTTP policy from plain code (set-up and close), on an event
        loop and a session of its own (module docstring). Raises ArmError for a 401/403 (the
        run stops), the errors of :func:`memrun.arms.http_async.send` otherwise."""
        async def once() -> http_async.Reply:
            session = http_async.open_session(self._headers, self._timeout)
            try:
                return await self._send(session, None, op, False, context)
            finally:
                await session.close()

        return run_blocking(once())

    def _loop_session(self) -> Any:
        """The pooled keep-alive aiohttp session of the running event loop (a new loop gets a new one)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            self._session = http_async.open_session(self._headers, self._timeout)
            self._loop, self._gate = loop, RateGate(self.max_rps)
        return self._session

    async def arequest(self, op: Operation, **context: Any) -> Any:
        """:meth:`request` on the event loop (:func:`memrun.arms.http_async.send`), through
        the server's shared :class:`RateGate`; the reply reads like an httpx response."""
        return await self._asend(op, False, context)

    async def arequest_json(self, op: Operation, **context: Any) -> Any:
        """:meth:`arequest` whose reply must be JSON: one that is not is retried under the
        policy, then raised as :class:`memrun.errors.MalformedReply` (an error of
        the item, not of the run)."""
        return await self._asend(op, True, context)

    async def _asend(self, op: Operation, expect_json: bool, context: dict[str, Any]) -> Any:
        session = self._loop_session()
        return await self._send(session, self._gate, op, expect_json, context)

    async def _send(self, session: Any, gate: RateGate | None, op: Operation, expect_json: bool,
                    context: dict[str, Any]) -> Any:
        url, body = self.render(op, context)
        try:
            return await http_async.send(session, op.method, url, policy=self.policy,
                                         idempotent=op.idempotent, auth_hint=self.auth_hint,
                                         gate=gate, expect_json=expect_json, **body)
        except AuthError as exc:
            raise self._auth_failed(op, exc) from exc

    @staticmethod
    def result(op: Operation, response: Any, missing_ok: bool = False) -> Any:
        """What ``op``'s result path finds in a response (an :class:`http_async.Reply`).
        Raises ArmError when the response is not JSON or (unless ``missing_ok``) the path finds nothing."""
        try:
            document = response.json()
        except ValueError as exc:
            raise ArmError(f"arm.{op.name}: {op.method} {response.request.url} did not answer with JSON "
                           f"({response.text[:80]!r})") from exc
        assert op.result is not None
        return op.result.find(document, f"the response of {op.method} {response.request.url}", missing_ok)

    async def disconnect(self) -> None:
        """Close the event loop's pooled connections."""
        session, self._session, self._loop = self._session, None, None
        if session is not None:
            await session.close()
