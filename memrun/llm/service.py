"""The run's LLM service: cache first, then a bounded number of concurrent calls.

Readers and judges call :meth:`LLMService.call`; it answers from the cache when it can,
else waits for one of ``concurrency`` slots, sends the request under the HTTP policy,
stores the reply and counts calls and tokens. Cache lookups made in the same turn of the
event loop are answered by one query, and :meth:`LLMService.prefetch` reads a batch of
replies ahead (a re-run looks up thousands of keys; each query releases the GIL and may
wait for it to come back). Once ``max_tokens_total`` tokens (as the API reported them)
were spent, new calls raise :class:`BudgetExhausted` and the run stops cleanly; cache
hits stay free.

Fresh replies are held by the cache and committed together once per turn of the event
loop (:meth:`memrun.llm.cache.CallCache.hold`), and :meth:`LLMService.aclose` commits what
is left: a stop keeps every answered call. A commit that fails (a full disk) stops the
run: the next call, or :meth:`LLMService.aclose`, raises its :class:`memrun.errors.CacheError`.

Identical requests in flight at once are sent once (single-flight): the second waits
for the first's reply and counts as cached, so a run's call count does not depend on
timing. The HTTP clients (and with them the ``openai`` SDK, ~1-2 s of imports) are built
on a thread when the first call misses the cache: a run answered wholly from the cache
never loads the SDK.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memrun.core.background import in_background
from memrun.core.http_policy import HttpPolicy
from memrun.core.redaction import Redactor
from memrun.core.slots import Slots
from memrun.errors import BudgetExhausted, CacheError, CallError, StopRequested
from memrun.llm.cache import CallCache, call_key
from memrun.llm.client import ChatClient, ChatRequest, ChatResult
from memrun.llm.endpoint import Endpoint
from memrun.llm.first_calls import FirstCalls

if TYPE_CHECKING:
    from memrun.llm.client import ChatClient


@dataclass
class CallStats:
    """Counters over a run (tokens as the API reported them)."""

    made: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rate_limit_waits: int = 0
    server_error_retries: int = 0  # 408 and 5xx
    transport_retries: int = 0  # resets, truncated replies, timeouts

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def _retries(client: ChatClient) -> int:
    """Waits and retries ``client`` has made so far (429s, 408s and 5xx, transport errors)."""
    return client.rate_limit_waits + client.server_error_retries + client.transport_retries


@dataclass(slots=True)
class CallOutcome:
    """A reply and whether it came from the cache (not frozen, as :class:`ChatResult`: one per call)."""

    result: ChatResult
    cached: bool


class LLMService:
    """Cache + concurrency + budget + counters over one :class:`ChatClient` per endpoint.

    cache: None disables caching. concurrency: calls in flight at most (>= 1).
    max_tokens_total: None for no cap. Must be used inside one event loop; call
    :meth:`aclose` at the end. Reply texts pass through :attr:`redactor` (every endpoint's
    key is registered in it) before they are cached or returned, so a gateway that echoes
    a key never gets it into the cache or a row.
    """

    def __init__(
        self,
        cache: CallCache | None,
        *,
        concurrency: int = 16,
        policy: HttpPolicy = HttpPolicy(),
        timeout: float = 120.0,
        max_tokens_total: int | None = None,
    ) -> None:
        self.cache = cache
        self.concurrency = concurrency
        self.policy = policy
        self.timeout = timeout
        self.max_tokens_total = max_tokens_total
        self.stats = CallStats()
        self.redactor = Redactor()
        self._clients: dict[Endpoint, ChatClient] = {}
        self._slots = Slots(concurrency)
        self._lookups: list[tuple[str, asyncio.Future[ChatResult | None]]] = []
        self._prefetched: dict[str, ChatResult] = {}
        self._missed: set[str] = set()  # keys prefetch() looked up and did not find (not looked up again)
        self._opening: Future[dict[Endpoint, ChatClient]] | None = None
        self._announced: list[Endpoint] = []  # endpoints given to open(), built at the first miss
        # key -> the call that will answer it: None until a twin waits for it (then the future the twins await)
        self._in_flight: dict[str, asyncio.Future[ChatResult] | None] = {}
        self._commit_due = False  # a commit of the held replies is scheduled on the loop
        self._commit_error: CacheError | None = None  # a failed commit: raised by the next call and by aclose
        self.in_flight = 0  # requests sent and not yet answered
        self._stop_reason: str | None = None  # set by stop_new_calls: no call is sent after it
        # (client, model) -> its failures before any success (memrun.llm.first_calls); settled: a call
        # succeeded, or they failed in more than one way (a judge's model is watched apart from the reader's)
        self._first_calls: dict[tuple[ChatClient, str], FirstCalls] = {}
        self._settled: set[tuple[ChatClient, str]] = set()
        # (endpoint identity, model asked for) -> the model the server said answered (instrument: served_models)
        self.reported: dict[tuple[str, str], str] = {}

    def open(self, endpoints: Iterable[Endpoint]) -> None:
        """Register the keys of ``endpoints`` with the redactor now and remember the
        endpoints: their HTTP clients are built together, on a thread, when the first call
        misses the cache (the SDK's imports and the TLS trust store take 1-2 s, which a run
        answered from the cache never spends and the event loop never waits on)."""
        for endpoint in dict.fromkeys(endpoints):
            self.redactor.add(endpoint.api_key)
            if endpoint not in self._announced:
                self._announced.append(endpoint)

    def _new_client(self, endpoint: Endpoint) -> ChatClient:
        return ChatClient(endpoint, policy=self.policy, timeout=self.timeout)

    def _opened(self) -> None:
        """Wait for clients being built (blocking; for :meth:`aclose`)."""
        if self._opening is not None:
            opening, self._opening = self._opening, None
            self._clients.update(opening.result())

    async def _client(self, endpoint: Endpoint) -> ChatClient:
        """The client for ``endpoint``; the first one asked for builds every announced
        endpoint's on a thread, and the event loop goes on meanwhile."""
        client = self._clients.get(endpoint)
        if client is not None:
            return client
        self.redactor.add(endpoint.api_key)
        if self._opening is None:
            todo = [e for e in dict.fromkeys([*self._announced, endpoint]) if e not in self._clients]
            self._opening = in_background(lambda: {e: self._new_client(e) for e in todo})
        opening = self._opening
        built = await asyncio.wrap_future(opening)
        if self._opening is opening:
            self._opening = None
        for e, c in built.items():
            self._clients.setdefault(e, c)
        client = self._clients.get(endpoint)
        if client is None:  # announced after that build started
            client = self._clients[endpoint] = self._new_client(endpoint)
        return client

    def stop_new_calls(self, reason: str) -> None:
        """From now on a call not in flight raises :class:`StopRequested` (``reason``) instead of
        being sent; cached replies are still read, and the calls in flight finish and are
        cached (a stop asked for: memrun.core.signals). Call it on the service's event loop."""
        self._stop_reason = reason

    @property
    def budget_left(self) -> bool:
        return self.max_tokens_total is None or self.stats.tokens < self.max_tokens_total

    async def call(self, endpoint: Endpoint, request: ChatRequest, repeat: int) -> CallOutcome:
        """The reply to ``request`` (repeat index ``repeat``), cached or fresh.

        Raises :class:`memrun.llm.client.CallError` for a failed call and
        :class:`BudgetExhausted` when the token cap is reached before the call starts, and
        :class:`StopRequested` for a call not yet sent once :meth:`stop_new_calls` was called.
        """
        if self._commit_error is not None:
            raise self._commit_error
        key = call_key(endpoint.identity, request, repeat)
        hit = self._prefetched.pop(key, None)
        if hit is None and self.cache is not None:
            if key in self._missed:  # read ahead and not there: a cold run's readers ask once, not twice
                self._missed.discard(key)
            elif not self.cache.lacks(key):  # a cold run's judges: known absent, no lookup to wait a turn for
                hit = await self._lookup(key)
        if hit is not None:
            self.stats.cached += 1
            self._note_model(endpoint, request, hit)
            return CallOutcome(hit, cached=True)
        in_flight = self._in_flight
        if key in in_flight:  # the same request is on its way: wait for its reply, not a second call
            twin = in_flight[key]
            if twin is None:  # the first twin makes the future the call answers (most calls have none)
                twin = in_flight[key] = asyncio.get_running_loop().create_future()
            result = await asyncio.shield(twin)
            self.stats.cached += 1
            return CallOutcome(result, cached=True)
        in_flight[key] = None
        try:
            result = await self._send(endpoint, request, key)
        except BaseException as exc:
            # Waiting twins fail too (a CallError is the item's error for each); a cancelled
            # call cancels them only if nobody else can answer.
            waiting = in_flight.pop(key, None)
            if waiting is not None:
                if isinstance(exc, asyncio.CancelledError):
                    waiting.cancel()
                else:
                    waiting.set_exception(exc)
                    waiting.exception()  # retrieved: no "never retrieved" warning when every twin was cancelled
            raise
        waiting = in_flight.pop(key, None)
        if waiting is not None:
            waiting.set_result(result)
        self._note_model(endpoint, request, result)
        return CallOutcome(result, cached=False)

    def _note_model(self, endpoint: Endpoint, request: ChatRequest, result: ChatResult) -> None:
        if result.model and (endpoint.identity, request.model) not in self.reported:
            self.reported[(endpoint.identity, request.model)] = result.model

    async def _send(self, endpoint: Endpoint, request: ChatRequest, key: str) -> ChatResult:
        """Make the call under a concurrency slot and the budget; count, redact and cache it."""
        slots = self._slots
        if slots.free:
            slots.free -= 1
        else:
            await slots.wait()
        try:
            if self._stop_reason is not None:
                raise StopRequested(self._stop_reason)
            if not self.budget_left:
                raise BudgetExhausted(f"max_tokens_total={self.max_tokens_total} reached")
            client = self._clients.get(endpoint) or await self._client(endpoint)
            self.stats.made += 1
            self.in_flight += 1
            retries = _retries(client)
            try:
                result = await client.complete(request)
            except CallError as exc:
                self.stats.failed += 1
                watched = (client, request.model)
                if watched not in self._settled:  # none succeeded yet: the first calls all alike stop the run
                    first = self._first_calls.setdefault(watched, FirstCalls(endpoint))
                    try:
                        first.failed(exc, request.model)
                    finally:
                        if first.settled:
                            self._settled.add(watched)
                            del self._first_calls[watched]
                raise
            except Exception:
                self.stats.failed += 1
                raise
            finally:
                self.in_flight -= 1
                if _retries(client) != retries:  # the run's counters are the clients' sums
                    self.stats.rate_limit_waits = sum(c.rate_limit_waits for c in self._clients.values())
                    self.stats.server_error_retries = sum(c.server_error_retries for c in self._clients.values())
                    self.stats.transport_retries = sum(c.transport_retries for c in self._clients.values())
        finally:
            slots.release()
        if (watched := (client, request.model)) not in self._settled:  # it answered: from now on its
            self._settled.add(watched)  # failures are the items' own
            self._first_calls.pop(watched, None)
        self.stats.prompt_tokens += result.prompt_tokens or 0
        self.stats.completion_tokens += result.completion_tokens or 0
        clean = self.redactor.reply(result.text)
        if clean != result.text:
            result = dataclasses.replace(result, text=clean)
        if self.cache is not None:
            self._missed.discard(key)  # the same request again (another item's) finds this reply
            self.cache.hold(key, result)
            if not self._commit_due:  # after the other replies of this turn of the loop
                self._commit_due = True
                asyncio.get_running_loop().call_soon(self._commit)
        return result

    def _commit(self) -> None:
        """Write the replies held this turn (one transaction); keep a failure for the next call."""
        self._commit_due = False
        if self.cache is None or self._commit_error is not None:
            return
        try:
            self.cache.commit()
        except CacheError as exc:
            self._commit_error = exc

    def prefetch(self, endpoint: Endpoint, calls: Iterable[tuple[ChatRequest, int]]) -> int:
        """Read the cached replies to ``calls`` ((request, repeat) pairs) in one query, so
        that :meth:`call` answers them without waiting on the event loop, and sends the
        others without looking them up again; returns how many were found. Call it with
        requests that will be made soon (one group's readers)."""
        if self.cache is None:
            return 0
        keys = [call_key(endpoint.identity, request, repeat) for request, repeat in calls]
        found = self.cache.get_many(keys)
        self._prefetched.update(found)
        if len(found) < len(keys):
            self._missed.update(key for key in keys if key not in found)
        return len(found)

    def prefetched(self, endpoint: Endpoint, request: ChatRequest, repeat: int) -> ChatResult | None:
        """The reply :meth:`prefetch` read for this call, if any (it stays there for :meth:`call`)."""
        return self._prefetched.get(call_key(endpoint.identity, request, repeat)) if self._prefetched else None

    def forget(self, endpoint: Endpoint, request: ChatRequest, repeat: int) -> None:
        """Drop the stored reply to ``request`` (a reply its reader could not use, such as
        an unparseable verdict), so that the next run makes the call again."""
        key = call_key(endpoint.identity, request, repeat)
        self._prefetched.pop(key, None)
        self._missed.discard(key)
        if self.cache is not None:
            self.cache.delete(key)

    def _lookup(self, key: str) -> asyncio.Future[ChatResult | None]:
        """The cached reply for ``key`` (or None), looked up with the others asked this turn."""
        future: asyncio.Future[ChatResult | None] = asyncio.get_running_loop().create_future()
        self._lookups.append((key, future))
        if len(self._lookups) == 1:
            future.get_loop().call_soon(self._resolve_lookups)
        return future

    def _resolve_lookups(self) -> None:
        batch, self._lookups = self._lookups, []
        try:
            found = self.cache.get_many([key for key, _ in batch]) if self.cache is not None else {}
        except Exception as exc:  # noqa: BLE001 - every waiter gets the error
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for key, future in batch:
            if not future.done():
                future.set_result(found.get(key))

    async def aclose(self) -> None:
        """Close the HTTP clients and the cache, committing the replies it holds (its
        write-ahead log is merged into the file). Raises CacheError when they cannot be written."""
        try:
            self._opened()
            for client in self._clients.values():
                await client.close()
        finally:
            self._clients.clear()
            if self.cache is not None:
                cache, self.cache = self.cache, None  # a commit still scheduled finds nothing to do
                cache.close()
