"""The blocking httpx client of memrun's set-up calls (a memory server's health and leftovers,
the OpenAI-compatible embedder), with its TLS context made only for https.

``httpx.Client()`` builds a TLS context at once, loading the CA bundle (0.05 s on an idle
machine, 0.2 s under load), for every client, even one that only ever talks to
``http://127.0.0.1``: that is start-up time a run spends before its first request. Here the
client's transport is chosen per request by the URL's scheme and each is built at its first
use: ``http`` gets an ``httpx.HTTPTransport`` whose TLS context is an empty, verifying one
(it never serves a TLS connection: plain HTTP needs none), any other scheme gets httpx's
default transport (certificate verification, the environment's ``SSL_CERT_FILE`` and the
rest, exactly as ``httpx.Client()`` would). Proxies from the environment are still httpx's
own mounts.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Mapping

import httpx


class _TransportPerScheme(httpx.BaseTransport):
    """An ``httpx.HTTPTransport`` per URL scheme, each made at its first request (thread-safe)."""

    def __init__(self) -> None:
        self._made: dict[str, httpx.HTTPTransport] = {}
        self._lock = threading.Lock()

    def _transport(self, scheme: str) -> httpx.HTTPTransport:
        transport = self._made.get(scheme)
        if transport is None:
            with self._lock:
                transport = self._made.get(scheme)
                if transport is None:
                    # plain HTTP: a TLS context that is never used, so none worth loading certificates into
                    transport = (httpx.HTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
                                 if scheme == "http" else httpx.HTTPTransport())
                    self._made[scheme] = transport
        return transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._transport(request.url.scheme).handle_request(request)

    def close(self) -> None:
        for transport in self._made.values():
            transport.close()


def blocking_client(headers: Mapping[str, str], timeout_s: float) -> httpx.Client:
    """``httpx.Client(headers=headers, timeout=timeout_s)`` whose TLS context is built only when
    an https URL is first sent (module docstring); close it as any httpx client."""
    return httpx.Client(headers=dict(headers), timeout=timeout_s, transport=_TransportPerScheme())
