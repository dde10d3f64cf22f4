"""Shared fixtures: loopback servers the tests start themselves (never a real API)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servers.openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible chat server (tests/servers/openai_server.py), fresh per test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def llm_env(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path) -> OpenAIServer:
    """Point OPENAI_BASE_URL / OPENAI_API_KEY at the loopback server; returns the server."""
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789abcdef")
    return openai_server
