"""One HTTP policy for every call memrun makes (LLM reader and judge, memory servers).

| response                  | policy                                                        |
|---------------------------|---------------------------------------------------------------|
| 2xx / 3xx                 | returned                                                      |
| 429                       | wait out ``Retry-After`` (1 s when absent or unparseable,     |
|                           | clamped to 0.2-60 s) and retry; waits do not use the 5xx      |
|                           | budget, but at most ``max_rate_limit_waits`` of them           |
| 5xx                       | retry after 0.5 x 2^n s (n = 0, 1, ...) until ``attempts``    |
|                           | requests were sent                                            |
| other >= 400, or the last | raise :class:`httpx.HTTPStatusError` with the start of the    |
| 429 / 5xx                 | body                                                          |
| transport error           | propagates (the caller counts it as an errored item)          |

Callers record a raised error on the item (``error`` column): errors are excluded from
ratios and counted, never scored as misses. :class:`Retrier` holds the decision logic so
that clients with their own transport (the ``openai`` SDK) apply the same rules.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

BODY_PREVIEW_CHARS = 300


@dataclass(frozen=True)
class HttpPolicy:
    """Retry settings (seconds). ``attempts`` counts requests sent, the first included."""

    attempts: int = 4
    backoff_base: float = 0.5
    retry_after_default: float = 1.0
    retry_after_min: float = 0.2
    retry_after_max: float = 60.0
    max_rate_limit_waits: int = 30


def retry_after_seconds(headers: Mapping[str, str], policy: HttpPolicy = HttpPolicy()) -> float:
    """Seconds to wait after a 429: ``Retry-After`` as seconds or an HTTP date, clamped."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    seconds = policy.retry_after_default
    if value is not None:
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = policy.retry_after_default
    return min(max(seconds, policy.retry_after_min), policy.retry_after_max)


class Retrier:
    """Decides, response by response, whether to retry and after how long.

    ``delay(status, headers)`` returns None to stop (the response is final: return it
    when < 400, raise otherwise) or the seconds to sleep before the next request.
    One Retrier serves one logical call.
    """

    def __init__(self, policy: HttpPolicy = HttpPolicy()) -> None:
        self.policy = policy
        self.sent = 0
        self.rate_limit_waits = 0
        self.server_errors = 0

    def delay(self, status: int, headers: Mapping[str, str]) -> float | None:
        self.sent += 1
        if status == 429:
            if self.rate_limit_waits >= self.policy.max_rate_limit_waits:
                return None
            self.rate_limit_waits += 1
            self.sent -= 1  # a 429 does not use the 5xx budget
            return retry_after_seconds(headers, self.policy)
        if status >= 500:
            if self.sent >= self.policy.attempts:
                return None
            wait = self.policy.backoff_base * 2**self.server_errors
            self.server_errors += 1
            return wait
        return None


def raise_for_status(response: httpx.Response) -> httpx.Response:
    """Return a < 400 response; raise HTTPStatusError with the body's start otherwise."""
    if response.status_code >= 400:
        body = response.text[:BODY_PREVIEW_CHARS].replace("\n", " ")
        raise httpx.HTTPStatusError(
            f"HTTP {response.status_code} from {response.request.method} {response.request.url}: {body}",
            request=response.request,
            response=response,
        )
    return response


def send(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    policy: HttpPolicy = HttpPolicy(),
    sleep: Callable[[float], None] = time.sleep,
    **kwargs: Any,
) -> httpx.Response:
    """Send a request under the policy (blocking). Raises HTTPStatusError or a transport error."""
    retrier = Retrier(policy)
    while True:
        response = client.request(method, url, **kwargs)
        wait = retrier.delay(response.status_code, response.headers)
        if wait is None:
            return raise_for_status(response)
        response.close()
        sleep(wait)


async def asend(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    policy: HttpPolicy = HttpPolicy(),
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    **kwargs: Any,
) -> httpx.Response:
    """Send a request under the policy (asyncio). Raises HTTPStatusError or a transport error."""
    retrier = Retrier(policy)
    while True:
        response = await client.request(method, url, **kwargs)
        wait = retrier.delay(response.status_code, response.headers)
        if wait is None:
            return raise_for_status(response)
        await response.aclose()
        await sleep(wait)
