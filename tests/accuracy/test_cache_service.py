"""The call cache and the LLM service: keys, hits, concurrency bound, token budget."""

from __future__ import annotations

import asyncio

import pytest

from memrun.llm.cache import CallCache, call_key
from memrun.llm.client import ChatRequest, ChatResult
from memrun.llm.endpoint import Endpoint
from memrun.llm.service import BudgetExhausted, LLMService

URL = "http://127.0.0.1:1/v1"


def req(content: str = "hi", model: str = "m", **params: object) -> ChatRequest:
    return ChatRequest(model, ({"role": "user", "content": content},), params or {"temperature": 0.0})


def test_key_covers_everything_that_determines_a_call():
    base = call_key(URL, req(), 0)
    assert base == call_key(URL, req(), 0)
    others = {
        call_key(URL, req(model="m2"), 0),
        call_key(URL, req(content="hi!"), 0),
        call_key(URL, req(temperature=0.7), 0),
        call_key(URL, req(), 1),
        call_key("http://other/v1", req(), 0),
    }
    assert base not in others and len(others) == 5


def test_a_key_stays_what_earlier_runs_stored_it_under():
    """The bytes hashed are fixed (key version 2): a change in how they are put together
    would make every reply a user's cache holds miss."""
    request = ChatRequest("gpt-4.1", ({"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Où est l'item 7 ? \u2014 bin 25"}),
                          {"temperature": 0.0, "max_tokens": 256})
    assert call_key("https://api.openai.com/v1", request, 2) == (
        "759db72cd60938f5b6041c64b8d5844fbc1c7de5d3b4b4efed710019e8d47bd5")


def test_a_request_keeps_its_keys_per_url_and_repeat():
    """The key memo on a request answers what hashing it afresh answers, per URL and repeat."""
    request = req()
    keys = [call_key(url, request, repeat) for url in (URL, "http://other/v1") for repeat in (0, 1, 0)]
    assert keys == [call_key(url, req(), repeat) for url in (URL, "http://other/v1") for repeat in (0, 1, 0)]
    assert len(set(keys)) == 4 and len(request.call_keys) == 4
    assert call_key(URL, req(content="hi!"), 0) != keys[0]  # another request: its own memo, another key


def test_cache_round_trip_persists_across_instances(tmp_path):
    result = ChatResult("answer", 12, None, 34.5, "stop")
    with CallCache(tmp_path) as cache:
        cache.put("k", result)
    with CallCache(tmp_path) as cache:
        assert cache.get("k") == result
        assert cache.get("missing") is None
        assert len(cache) == 1


def test_service_answers_from_cache_without_a_call(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go() -> list[bool]:
        svc = LLMService(CallCache(tmp_path), concurrency=4)
        try:
            outs = [await svc.call(endpoint, req(), 0), await svc.call(endpoint, req(), 0), await svc.call(endpoint, req(), 1)]
        finally:
            await svc.aclose()
        assert (svc.stats.made, svc.stats.cached) == (2, 1)
        return [o.cached for o in outs]

    assert asyncio.run(go()) == [False, True, False]
    assert openai_server.count() == 2


def test_failed_calls_are_not_cached(tmp_path, openai_server):
    from memrun.llm.client import CallError
    from servers.openai_server import Reply

    openai_server.script(Reply.error(400, "bad"))
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go() -> str:
        svc = LLMService(CallCache(tmp_path))
        try:
            with pytest.raises(CallError):
                await svc.call(endpoint, req(), 0)
            return (await svc.call(endpoint, req(), 0)).result.text
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == "loopback answer"
    assert openai_server.count() == 2


def test_concurrency_is_bounded(openai_server):
    openai_server.latency = 0.5
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go() -> None:
        svc = LLMService(None, concurrency=3)
        try:
            await asyncio.gather(*(svc.call(endpoint, req(str(i)), 0) for i in range(9)))
        finally:
            await svc.aclose()

    asyncio.run(go())
    times = sorted(e.t for e in openai_server.log)
    # 9 calls, 3 at a time, 0.5 s each: three waves 0.5 s apart. The first three arrive
    # together (within 0.4 s on a loaded machine; one or two at a time: 0.5 s apart or more),
    # the fourth only once one of them is answered.
    assert times[2] - times[0] < 0.4 and times[3] - times[0] >= 0.45 and times[6] - times[0] >= 0.9


def test_slots_go_first_come_first_served_and_a_cancelled_waiter_loses_none():
    from memrun.core.slots import Slots

    async def go() -> list[str]:
        slots, order = Slots(1), []
        slots.free -= 1  # taken

        async def waiter(name: str) -> None:  # as LLMService._send takes a slot
            if slots.free:
                slots.free -= 1
            else:
                await slots.wait()
            order.append(name)
            slots.release()

        tasks = [asyncio.create_task(waiter(n)) for n in "abc"]
        await asyncio.sleep(0)
        tasks[1].cancel()  # b gives up while waiting
        slots.release()
        await asyncio.gather(tasks[0], tasks[2])
        handed = asyncio.create_task(waiter("d"))
        await handed  # the slot was free: d takes it at once
        assert slots.free == 1 and not slots._waiters and tasks[1].cancelled()
        # a waiter handed the slot but cancelled before it ran passes the slot on
        slots.free -= 1
        e, f = asyncio.create_task(waiter("e")), asyncio.create_task(waiter("f"))
        await asyncio.sleep(0)
        slots.release()  # handed to e ...
        e.cancel()  # ... which is cancelled before it resumes
        await asyncio.wait_for(f, 5)  # a slot lost with e would leave f waiting
        assert e.cancelled() and slots.free == 1
        return order

    assert asyncio.run(go()) == ["a", "c", "d", "f"]


def test_token_budget_stops_new_calls(openai_server):
    openai_server.usage = (40, 10)
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go() -> int:
        svc = LLMService(None, concurrency=1, max_tokens_total=100)
        done = 0
        try:
            for i in range(5):
                await svc.call(endpoint, req(str(i)), 0)
                done += 1
        except BudgetExhausted:
            pass
        finally:
            await svc.aclose()
        return done

    assert asyncio.run(go()) == 2  # 50 + 50 tokens reach the cap of 100
    assert openai_server.count() == 2


def test_open_registers_keys_at_once_and_builds_clients_ahead(tmp_path, openai_server):
    key = "sk-opened-ahead-0123456789abcdef"
    endpoint = Endpoint(openai_server.base_url, key)

    async def go() -> tuple[bool, int, bool]:
        svc = LLMService(CallCache(tmp_path))
        svc.open([endpoint, endpoint])
        redacted_before_any_call = key not in svc.redactor.text(f"echo {key}")
        try:
            first = await svc.call(endpoint, req(), 0)
            return redacted_before_any_call, len(svc._clients), first.cached
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == (True, 1, False)
    assert openai_server.count() == 1


def test_prefetch_answers_calls_without_a_lookup(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go() -> tuple[int, list[bool], int]:
        svc = LLMService(CallCache(tmp_path))
        try:
            await svc.call(endpoint, req("a"), 0)
            await svc.call(endpoint, req("b"), 0)
            found = svc.prefetch(endpoint, [(req("a"), 0), (req("b"), 0), (req("c"), 0)])
            svc.cache.close()  # a lookup now would fail: prefetched replies must not need one
            outs = [await svc.call(endpoint, req(x), 0) for x in "ab"]
            return found, [o.cached for o in outs], svc.stats.cached
        finally:
            svc.cache = None
            await svc.aclose()

    assert asyncio.run(go()) == (2, [True, True], 2)
    assert openai_server.count() == 2


def test_a_call_prefetch_did_not_find_is_sent_without_a_second_lookup(tmp_path):
    """A cold run reads its readers' replies ahead and finds none: each is then sent at once,
    not looked up again; a request asked again after its reply came (another item's with
    the same prompt) still finds that reply."""
    endpoint = Endpoint(URL, "sk-test")
    cache = CallCache(tmp_path)
    svc = LLMService(cache, concurrency=8)
    svc._new_client = lambda e: _Instant()  # type: ignore[method-assign]
    looked_up: list[list[str]] = []
    real_get_many = cache.get_many
    cache.get_many = lambda keys: looked_up.append(list(keys)) or real_get_many(keys)  # type: ignore[method-assign]

    async def go() -> list[bool]:
        try:
            assert svc.prefetch(endpoint, [(req("a"), 0), (req("b"), 0)]) == 0
            first = await asyncio.gather(svc.call(endpoint, req("a"), 0), svc.call(endpoint, req("b"), 0))
            again = await svc.call(endpoint, req("a"), 0)
            return [o.cached for o in (*first, again)]
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == [False, False, True]
    assert looked_up == [[call_key(URL, req("a"), 0), call_key(URL, req("b"), 0)], [call_key(URL, req("a"), 0)]]
    assert svc.stats.made == 2


def test_once_a_lookup_missed_calls_the_cache_surely_lacks_wait_on_no_lookup(tmp_path):
    """A cold run's judge calls (no read ahead): after the first lookup missed, the cache
    knows which keys it holds, so each later call for an absent key is sent at once, without
    a lookup and the loop turn it waits; one it holds is still looked up and found."""
    endpoint = Endpoint(URL, "sk-test")
    cache = CallCache(tmp_path)
    cache.put(call_key(URL, req("stored"), 0), ChatResult("kept", 1, 1, 1.0, "stop"))
    svc = LLMService(cache, concurrency=8)
    svc._new_client = lambda e: _Instant()  # type: ignore[method-assign]
    looked_up: list[str] = []
    real_lookup = svc._lookup
    svc._lookup = lambda key: looked_up.append(key) or real_lookup(key)  # type: ignore[method-assign]

    async def go() -> list[bool]:
        try:
            first = await svc.call(endpoint, req("j0"), 0)  # looked up: the miss reads the index
            rest = await asyncio.gather(*(svc.call(endpoint, req(f"j{i}"), 0) for i in range(1, 6)))
            stored = await svc.call(endpoint, req("stored"), 0)
            return [o.cached for o in (first, *rest, stored)]
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == [False] * 6 + [True]
    assert looked_up == [call_key(URL, req("j0"), 0), call_key(URL, req("stored"), 0)]
    assert svc.stats.made == 6


def test_lookups_in_one_loop_turn_share_one_query(tmp_path, openai_server, monkeypatch):
    endpoint = Endpoint(openai_server.base_url, "sk-test")
    batches: list[int] = []

    async def go() -> list[bool]:
        svc = LLMService(CallCache(tmp_path))
        try:
            for i in range(5):
                await svc.call(endpoint, req(str(i)), 0)
            real = svc.cache.get_many
            monkeypatch.setattr(svc.cache, "get_many", lambda keys: batches.append(len(keys)) or real(keys))
            outs = await asyncio.gather(*(svc.call(endpoint, req(str(i)), 0) for i in range(5)))
            return [o.cached for o in outs]
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == [True] * 5
    assert batches == [5] and openai_server.count() == 5


def test_a_rerun_reads_every_reply_ahead_in_one_query_per_batch_and_endpoint(llm_env, tmp_path, monkeypatch):
    """An identical re-run reads readers' and then judges' cached replies ahead, one query
    each per batch of groups (the first group alone, then as many as the concurrency holds:
    :mod:`memrun.accuracy.stage`): no call waits on the event loop for a lookup of its own."""
    from accuracy.helpers import execute_run, rows

    execute_run(tmp_path, "judge=gpt41", "repeats=2", name="cold")
    made = llm_env.count()
    queries: list[int] = []
    lookups: list[str] = []
    real_get_many = CallCache.get_many
    monkeypatch.setattr(CallCache, "get_many", lambda self, keys: queries.append(len(keys)) or real_get_many(self, keys))
    real_lookup = LLMService._lookup
    monkeypatch.setattr(LLMService, "_lookup", lambda self, key: lookups.append(key) or real_lookup(self, key))
    out, _ = execute_run(tmp_path, "judge=gpt41", "repeats=2", name="warm")
    assert llm_env.count() == made and lookups == []
    n_rows = len(rows(out))
    assert sum(queries) == 2 * n_rows  # every reader and judge reply, each read once
    groups = len({r["cluster"] for r in rows(out)})
    assert len(queries) % 2 == 0 and 2 < len(queries) < 2 * groups  # two queries per batch, a batch of 1+ groups


def _rows_on_disk(folder) -> int:
    """Replies on disk, in the cache file or a side file (what survives a kill of this process)."""
    import sqlite3

    from memrun.llm.cache import SIDE_GLOB, _read_side

    with sqlite3.connect(folder / "calls.sqlite") as db:
        keys = {key for (key,) in db.execute("SELECT key FROM replies")}
    for side in folder.glob(SIDE_GLOB):
        keys |= set(_read_side(side.read_bytes()))
    return len(keys)


def test_held_replies_are_read_at_once_and_written_in_one_commit(tmp_path):
    results = {f"k{i}": ChatResult(f"answer {i}", i, 1, 2.5, "stop", "m") for i in range(3)}
    with CallCache(tmp_path) as cache:
        for key, result in results.items():
            cache.hold(key, result)
        assert cache.get_many([*results, "missing"]) == results and cache.held == 3
        assert _rows_on_disk(tmp_path) == 0
        cache.delete("k1")  # a reply its reader could not use: gone before it was written
        cache.commit()
        assert cache.held == 0 and _rows_on_disk(tmp_path) == 2
    with CallCache(tmp_path) as cache:
        assert cache.get_many(list(results)) == {"k0": results["k0"], "k2": results["k2"]}


class _Instant:
    """A chat client that answers at once, without giving the event loop a turn."""

    rate_limit_waits = server_error_retries = transport_retries = 0

    async def complete(self, request: ChatRequest) -> ChatResult:
        return ChatResult(f"re: {request.messages[0]['content']}", 3, 2, 1.0, "stop", "m")

    async def close(self) -> None:
        pass


def test_a_stop_before_the_turn_ends_keeps_every_answered_call(tmp_path):
    """Replies are committed once per turn of the loop; a stop that lands before that commit
    (here: the turn's commit never comes) still writes every one of them."""
    endpoint = Endpoint(URL, "sk-test")
    svc = LLMService(CallCache(tmp_path), concurrency=8)
    svc._new_client = lambda e: _Instant()  # type: ignore[method-assign]
    svc._commit = lambda: None  # type: ignore[method-assign]

    async def go() -> None:
        try:
            outcomes = await asyncio.gather(*(svc.call(endpoint, req(f"q{i}"), 0) for i in range(5)))
            assert not any(o.cached for o in outcomes)
            assert svc.cache is not None and svc.cache.held == 5 and _rows_on_disk(tmp_path) == 0  # mid-batch
            raise asyncio.CancelledError  # the stop (Ctrl-C and SIGTERM cancel the run's task)
        finally:
            await svc.aclose()

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(go())
    assert _rows_on_disk(tmp_path) == 5
    with CallCache(tmp_path) as cache:
        assert [cache.get(call_key(URL, req(f"q{i}"), 0)) for i in range(5)] == [
            ChatResult(f"re: q{i}", 3, 2, 1.0, "stop", "m") for i in range(5)]


def test_replies_are_committed_once_the_loop_turns(tmp_path):
    endpoint = Endpoint(URL, "sk-test")
    svc = LLMService(CallCache(tmp_path), concurrency=8)
    svc._new_client = lambda e: _Instant()  # type: ignore[method-assign]

    async def go() -> int:
        try:
            await asyncio.gather(*(svc.call(endpoint, req(f"q{i}"), 0) for i in range(6)))
            await asyncio.sleep(0)
            return _rows_on_disk(tmp_path)
        finally:
            await svc.aclose()

    assert asyncio.run(go()) == 6


def test_a_failed_commit_stops_the_next_call(tmp_path):
    from memrun.errors import CacheError

    endpoint = Endpoint(URL, "sk-test")
    cache = CallCache(tmp_path)
    svc = LLMService(cache, concurrency=8)
    svc._new_client = lambda e: _Instant()  # type: ignore[method-assign]
    full = CacheError("cannot write to the call cache (database or disk is full)")

    def refuse() -> None:
        raise full

    async def go() -> None:
        await svc.call(endpoint, req("first"), 0)
        cache.commit = refuse  # type: ignore[method-assign]
        await asyncio.sleep(0)  # the turn's commit fails
        with pytest.raises(CacheError) as second:
            await svc.call(endpoint, req("second"), 0)
        assert second.value is full
        with pytest.raises(CacheError):
            await svc.aclose()  # the held reply cannot be written either: said, not dropped silently

    asyncio.run(go())


def test_endpoints_that_differ_only_in_a_query_value_never_share_cached_replies(tmp_path, openai_server, monkeypatch):
    """A base URL's query is sent with every call (Azure's ?api-version=, a gateway's ?route=):
    the cache keyed the endpoint by its URL without the query, so a run against ?route=b read
    the replies ?route=a had given, and both runs recorded the same llm_endpoints. Now each run
    makes its own calls, the instrument tells them apart, and no query value is recorded."""
    import json

    import pyarrow.parquet as pq

    from accuracy.helpers import run_memrun
    from memrun.core.instrument import METADATA_KEY

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789abcdef")
    endpoints = []
    for name, route in (("a", "route-a-7c1f"), ("b", "route-b-93e2"), ("a-again", "route-a-7c1f")):
        monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.base_url}?route={route}")
        sent = openai_server.count()
        rc, out = run_memrun(tmp_path, "judge=exact", name=name)  # one cache folder for the three
        assert rc == 0
        made = openai_server.count() - sent
        assert made == (0 if name == "a-again" else 30), (name, made)  # the same query: read back
        recorded = json.loads(pq.read_schema(out / "items.parquet").metadata[METADATA_KEY])["llm_endpoints"]["reader"]
        assert "route-" not in recorded and recorded.startswith(f"{openai_server.base_url}?route=***")
        endpoints.append(recorded)
    assert endpoints[0] != endpoints[1] and endpoints[0] == endpoints[2]
    plain = Endpoint(URL, "sk-test")
    assert plain.identity == URL  # without a query: the keys every cache holds are unchanged
