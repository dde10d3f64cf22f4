"""A root URL's query reaches the server on every request; a root that is no http(s) URL, or has a fragment, is refused (memrun.core.url_join)."""

from __future__ import annotations

import asyncio

import pytest

from memrun.core.url_join import join_url, root_url_error
from memrun.errors import ArmError, ConfigError
from memrun.llm.client import ChatClient, ChatRequest
from memrun.llm.endpoint import Endpoint, resolve_endpoint


@pytest.mark.parametrize(("root", "path", "url"), [
    ("http://h/v1?api-version=2024-06-01", "chat/completions", "http://h/v1/chat/completions?api-version=2024-06-01"),
    ("http://h/v1/", "/chat/completions", "http://h/v1/chat/completions"),  # a leading / stays under the root
    ("http://h/api", "/search?k=5", "http://h/api/search?k=5"),
    ("http://u:p@h:8/?api_key=x&v=1", "v1/ns/n/search?token=t", "http://u:p@h:8/v1/ns/n/search?api_key=x&v=1&token=t"),
    ("http://h", "health", "http://h/health"),
])
def test_join_url_keeps_the_roots_query_before_the_paths(root, path, url):
    assert join_url(root, path) == url


def test_root_url_error_names_the_key_and_masks_the_url():
    assert root_url_error("http://h/v1?x=1", "reader.base_url") is None
    assert root_url_error("HTTPS://h:8443", "reader.base_url") is None
    message = root_url_error("http://h/v1?key=sk-secret#access_token=tok-secret", "reader.base_url")
    assert message is not None and message.startswith("reader.base_url: ") and "remove it" in message
    assert "sk-secret" not in message and "tok-secret" not in message


@pytest.mark.parametrize("url", ["notaurl", "localhost:8000/v1", "ftp://h/v1", "http:///v1", "/v1?key=sk-secret"])
def test_a_root_url_without_an_http_scheme_and_host_is_refused(url):
    """Every request would fail alike: a run of one error row per item (``InvalidUrlClientError``)."""
    message = root_url_error(url, "reader.base_url")
    assert message is not None and message.startswith("reader.base_url=") and "not an http(s) URL" in message
    assert "sk-secret" not in message


def test_the_chat_client_sends_the_roots_query(openai_server):
    async def go() -> None:
        client = ChatClient(Endpoint(f"{openai_server.base_url}?api-version=2024-06-01", "sk-test"))
        try:
            await client.complete(ChatRequest("gpt-test", ({"role": "user", "content": "hi"},), {}))
        finally:
            await client.close()

    asyncio.run(go())
    (entry,) = openai_server.log
    assert (entry.path, entry.query) == ("/v1/chat/completions", "api-version=2024-06-01")


def test_the_openai_embedder_sends_the_roots_query(openai_server, monkeypatch):
    from memrun.arms.embedders import OpenAIEmbedder

    monkeypatch.setenv("MEMRUN_TEST_KEY", "sk-test")
    embedder = OpenAIEmbedder(base_url=f"{openai_server.base_url}?api-version=1", api_key_env="MEMRUN_TEST_KEY")
    assert embedder.embed(["a", "b"]).shape[0] == 2
    (entry,) = openai_server.log
    assert (entry.path, entry.query) == ("/v1/embeddings", "api-version=1")


def test_a_root_with_a_fragment_is_refused_where_it_is_configured(monkeypatch):
    monkeypatch.setenv("MEMRUN_TEST_KEY", "sk-test")
    with pytest.raises(ConfigError, match=r"^reader\.base_url: .*fragment"):
        resolve_endpoint("reader", model="gpt-4o", base_url="http://127.0.0.1:9/v1#frag", base_url_env=None,
                         api_key_env="MEMRUN_TEST_KEY")
    from memrun.arms.embedders import OpenAIEmbedder

    with pytest.raises(ArmError, match=r"^arm\.embedder\.base_url: .*fragment"):
        OpenAIEmbedder(base_url="http://127.0.0.1:9/v1#frag", api_key_env="MEMRUN_TEST_KEY")
