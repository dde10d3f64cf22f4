"""An OpenAI-compatible chat client under memrun's HTTP policy.

The ``openai`` SDK's async client is built with ``max_retries=0`` (and on aiohttp, the
SDK's faster transport for many concurrent calls, when installed); every retry decision
is :class:`memrun.http_policy.Retrier`'s (429: wait out Retry-After without using the
retry budget; 408, 5xx and transport errors: jittered 0.5 x 2^n s backoff up to
``attempts``; 401/403: :class:`memrun.errors.AuthError`, which stops the run; other
>= 400: raise with the body's start). Errors reach the caller as :class:`CallError` with
a one-line message; the caller records them on the item, where they are counted and
excluded from ratios.

Requests go through the SDK's client (auth, headers, error mapping to ``APIStatusError``
with the response headers) via its ``post`` with the JSON body as bytes, and the reply is
read here: the typed ``chat.completions.create`` wrapper spends about 1 ms of CPU per call
transforming parameters and building models, which caps a single event loop near the
concurrency a run needs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memrun.errors import AuthError
from memrun.http_policy import AUTH_STATUSES, BODY_PREVIEW_CHARS, HttpPolicy, Retrier, auth_error
from memrun.llm.endpoint import Endpoint, Redactor

if TYPE_CHECKING:
    import openai

Message = Mapping[str, str]

# The SDK's transport logs every request at INFO; a run makes thousands.
for _name in ("httpx", "httpx2", "openai"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def _openai() -> Any:
    """The ``openai`` module, imported on first use (~1-2 s of CPU): a run whose every
    call is cached, and every process that only reads requests and replies, never loads it."""
    import openai

    return openai


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
        digest = hashlib.sha256(repr((self.model, sorted(self.params.items()))).encode())
        for message in self.messages:
            digest.update(b"\x1e%d" % len(message))
            for name, value in sorted(message.items()):
                for part in (name.encode(), str(value).encode()):
                    digest.update(b"\x1f%d:" % len(part))
                    digest.update(part)
        return digest.digest()


@dataclass(frozen=True)
class ChatResult:
    """A reply. Token counts are what the API reported (None when it reported nothing).

    latency_ms: wall time of the request that succeeded (waits before retries excluded).
    """

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    finish_reason: str | None = None


class CallError(Exception):
    """A call failed for good. ``kind``: ``http`` (status >= 400 after the policy),
    ``transport`` (connection, timeout), ``malformed`` (a 2xx reply memrun cannot read),
    ``context_overflow`` (the server says the prompt is longer than the model's window)."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


def _body_start(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except Exception:  # noqa: BLE001 - a streamed or closed body
        text = str(exc.body or "")
    return " ".join(text[:BODY_PREVIEW_CHARS].split())


def _is_overflow(exc: openai.APIStatusError) -> bool:
    code = getattr(exc, "code", None) or ""
    text = _body_start(exc).lower()
    return code == "context_length_exceeded" or "context_length_exceeded" in text or "maximum context length" in text


class ChatClient:
    """Chat completions against one :class:`Endpoint` (one ``openai.AsyncOpenAI``).

    timeout: seconds per request. sleep: injectable for tests.
    """

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
        self._sleep = sleep
        openai = self._openai = _openai()
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0, timeout=timeout, **_transport()
        )
        self.rate_limit_waits = 0
        self.server_error_retries = 0
        self.transport_retries = 0

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send ``request`` under the policy. Raises :class:`CallError` for a failed call and
        :class:`memrun.errors.AuthError` when the server refuses the key (401/403)."""
        retrier = Retrier(self.policy)
        openai = self._openai
        while True:
            t0 = time.perf_counter()
            try:
                raw = await self._client.post(
                    "/chat/completions",
                    body={"model": request.model, "messages": [dict(m) for m in request.messages], **dict(request.params)},
                    cast_to=bytes,
                )
            except openai.APIStatusError as exc:
                wait = retrier.delay(exc.status_code, exc.response.headers)
                if wait is None:
                    if exc.status_code in AUTH_STATUSES:
                        raise self._auth_error(exc) from None
                    kind = "context_overflow" if exc.status_code == 400 and _is_overflow(exc) else "http"
                    raise CallError(kind, f"HTTP {exc.status_code}: {_body_start(exc)}", exc.status_code) from None
                if exc.status_code == 429:
                    self.rate_limit_waits += 1
                else:
                    self.server_error_retries += 1
                await self._sleep(wait)
                continue
            except openai.APIConnectionError as exc:  # includes APITimeoutError, resets and truncated bodies
                # A chat completion changes nothing on the server: safe to send again.
                wait = retrier.transport_delay(exc, idempotent=True)
                if wait is None:
                    raise CallError("transport", _transport_message(exc, self.endpoint.public_url)) from None
                self.transport_retries += 1
                await self._sleep(wait)
                continue
            latency = (time.perf_counter() - t0) * 1000.0
            return parse_completion(raw, latency)

    def _auth_error(self, exc: openai.APIStatusError) -> AuthError:
        key = f"the key in ${self.endpoint.key_env}" if self.endpoint.key_env else "the API key"
        body = Redactor([self.endpoint.api_key]).text(_body_start(exc))  # a gateway may echo the key
        return auth_error(exc.status_code, "POST", f"{self.endpoint.public_url}/chat/completions", body,
                          f"the server refused {key}; check it and the model's access")

    async def close(self) -> None:
        await self._client.close()


def _transport_message(exc: openai.APIConnectionError, url: str) -> str:
    """One line for a failed connection. The SDK's aiohttp transport reports a refused
    connection as a timeout ("Request timed out ... Connect call failed"); say what it is."""
    cause = f"{type(exc.__cause__).__name__}: {exc.__cause__}" if exc.__cause__ else ""
    if type(exc.__cause__).__name__ == "ConnectError" or "Connect call failed" in cause or "Cannot connect to host" in cause:
        return f"cannot connect to {url} (nothing answers there; is the server running?)"
    return f"{type(exc).__name__}: {exc}{f' ({cause})' if cause else ''}".splitlines()[0]


def _transport() -> dict[str, Any]:
    """``http_client=`` the SDK's aiohttp client when the ``aiohttp`` extra is installed, else nothing."""
    factory = getattr(_openai(), "DefaultAioHttpClient", None)
    if factory is None:
        return {}
    try:
        return {"http_client": factory()}
    except RuntimeError:  # the SDK says aiohttp is not installed
        return {}


def parse_completion(raw: bytes, latency_ms: float) -> ChatResult:
    """Read a chat.completion JSON body. Raises CallError(``malformed``) when it is not
    JSON or has no ``choices[0].message.content`` string; usage counts that are not
    integers are None (never estimated)."""
    try:
        reply = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        preview = raw[:80].decode("utf-8", "replace")
        raise CallError("malformed", f"unreadable reply: not JSON ({exc}): {preview!r}") from None
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CallError("malformed", "unreadable reply: no choices")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise CallError("malformed", "unreadable reply: choices[0].message.content is not text")
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}

    def tokens(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return ChatResult(
        text=text,
        prompt_tokens=tokens("prompt_tokens"),
        completion_tokens=tokens("completion_tokens"),
        latency_ms=latency_ms,
        finish_reason=choices[0].get("finish_reason"),
    )
