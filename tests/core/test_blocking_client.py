"""The set-up calls' blocking client: plain HTTP without a loaded TLS context, https verified as httpx's own."""

from __future__ import annotations

import socket
import ssl
import threading

import httpx
import pytest

from memrun.core import blocking_client


def test_plain_http_is_served_without_building_the_tls_transport(memory):
    _, url = memory
    client = blocking_client.blocking_client({"X-Test": "1"}, 5.0)
    try:
        reply = client.get(f"{url}/v1/health")
        assert reply.status_code == 200 and "build" in reply.json()
        transport = client._transport
        assert isinstance(transport, blocking_client._TransportPerScheme)
        assert set(transport._made) == {"http"}  # no CA bundle loaded for a plain-HTTP server
        ctx = transport._made["http"]._pool._ssl_context
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname  # never a TLS context that trusts anything
    finally:
        client.close()


def test_https_gets_httpxs_verifying_transport(monkeypatch):
    made = []
    original = httpx.HTTPTransport.__init__

    def recording(self, *args, **kwargs):
        made.append(kwargs)
        original(self, *args, **kwargs)

    monkeypatch.setattr(httpx.HTTPTransport, "__init__", recording)
    with socket.socket() as listener:  # accepts, then closes: a TLS handshake cannot complete
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        threading.Thread(target=lambda: listener.accept()[0].close(), daemon=True).start()
        client = blocking_client.blocking_client({}, 2.0)
        try:
            with pytest.raises(httpx.TransportError):
                client.get(f"https://127.0.0.1:{port}/")
        finally:
            client.close()
    assert made == [{}]  # httpx's defaults: verify=True, the environment's certificates
