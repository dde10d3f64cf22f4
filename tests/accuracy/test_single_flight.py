"""Identical requests in flight at once are sent once; a cached run never loads the SDK."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

from memrun.llm.cache import CallCache
from memrun.llm.client import CallError, ChatRequest
from memrun.llm.endpoint import Endpoint
from memrun.llm.service import LLMService
from servers.openai_server import Reply


def req(content: str = "hi") -> ChatRequest:
    return ChatRequest("m", ({"role": "user", "content": content},), {"temperature": 0.0})


def test_identical_requests_in_flight_make_one_call(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def go():
        svc = LLMService(CallCache(tmp_path), concurrency=8)
        try:
            outs = await asyncio.gather(*(svc.call(endpoint, req(x), 0) for x in "aaaab"))
            return outs, svc.stats
        finally:
            await svc.aclose()

    outs, stats = asyncio.run(go())
    assert openai_server.count() == 2  # "a" once, "b" once
    assert stats.made == 2 and stats.cached == 3
    assert [o.cached for o in outs].count(False) == 2
    assert len({o.result.text for o in outs[:4]}) == 1


def test_a_failed_call_fails_its_waiting_twins_and_is_not_cached(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")
    openai_server.script(Reply(400, {"error": {"message": "bad request"}}))

    async def go():
        svc = LLMService(CallCache(tmp_path), concurrency=8)
        try:
            outs = await asyncio.gather(*(svc.call(endpoint, req(), 0) for _ in range(3)), return_exceptions=True)
            again = await svc.call(endpoint, req(), 0)
            return outs, again
        finally:
            await svc.aclose()

    outs, again = asyncio.run(go())
    assert all(isinstance(o, CallError) for o in outs)
    assert not again.cached and openai_server.count() == 2


def test_a_run_answered_from_the_cache_never_imports_the_http_stack(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")

    async def warm():
        svc = LLMService(CallCache(tmp_path))
        try:
            await svc.call(endpoint, req(), 0)
        finally:
            await svc.aclose()

    asyncio.run(warm())
    code = textwrap.dedent(f"""
        import asyncio, sys
        from memrun.llm.cache import CallCache
        from memrun.llm.client import ChatRequest
        from memrun.llm.endpoint import Endpoint
        from memrun.llm.service import LLMService

        async def go():
            svc = LLMService(CallCache(sys.argv[1]))
            endpoint = Endpoint({openai_server.base_url!r}, "sk-test")
            svc.open([endpoint])
            try:
                out = await svc.call(endpoint, ChatRequest("m", ({{"role": "user", "content": "hi"}},),
                                                           {{"temperature": 0.0}}), 0)
            finally:
                await svc.aclose()
            assert out.cached, out
        asyncio.run(go())
        print("openai" in sys.modules, "aiohttp" in sys.modules, "httpx" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False"]


def test_a_cancelled_twin_leaves_the_others_their_reply_and_a_cancelled_call_cancels_its_twins(tmp_path, openai_server):
    endpoint = Endpoint(openai_server.base_url, "sk-test")
    openai_server.script(Reply.ok("slow", delay=0.5), Reply.ok("slow too", delay=0.5))

    async def go():
        svc = LLMService(CallCache(tmp_path), concurrency=8)
        try:
            first, quitter, last = (asyncio.ensure_future(svc.call(endpoint, req("a"), 0)) for _ in range(3))
            await asyncio.sleep(0.1)
            quitter.cancel()  # a twin gives up: the call and the other twin go on
            kept = await asyncio.gather(first, quitter, last, return_exceptions=True)
            sender, twin = (asyncio.ensure_future(svc.call(endpoint, req("b"), 0)) for _ in range(2))
            await asyncio.sleep(0.1)
            sender.cancel()  # the call itself is cancelled: nobody else can answer its twin
            dropped = await asyncio.gather(sender, twin, return_exceptions=True)
            return kept, dropped, svc.stats
        finally:
            await svc.aclose()

    (first, quitter, last), dropped, stats = asyncio.run(go())
    assert first.result.text == last.result.text == "slow" and not first.cached and last.cached
    assert isinstance(quitter, asyncio.CancelledError)
    assert all(isinstance(d, asyncio.CancelledError) for d in dropped)
    assert openai_server.count() == 2 and stats.made == 2
