"""Where LLM calls go, the keys they carry, and keeping those keys out of every file.

memrun reads API keys only from the environment: a reader or judge config names the
variable (``api_key_env``, default ``OPENAI_API_KEY``), never the key. The base URL comes
from the config (``base_url``), else from the variable named by ``base_url_env`` (default
``OPENAI_BASE_URL``), else OpenAI's: that last fallback only for OpenAI's own key
(``$OPENAI_API_KEY``), so that a gateway's key (``judge=claude``: ``$MEMRUN_GATEWAY_API_KEY``)
goes to its gateway or nowhere, never to OpenAI. Every string memrun writes from an LLM exchange
(error bodies, judge explanations) passes through :class:`memrun.core.redaction.Redactor`, which
replaces the keys in use with ``***`` (the rules for secrets live in :mod:`memrun.core.redaction`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import urlsplit, urlunsplit

from memrun.core.redaction import (  # noqa: F401 - re-exported: the rules for secrets live in memrun.core.redaction
    REDACTED,
    LiteralSecretError,
    Redactor,
    check_no_secrets,
    find_literal_secrets,
)
from memrun.core.url_join import root_url_error
from memrun.core.url_secrets import has_userinfo, redact_urls, url_identity
from memrun.errors import ConfigError

__all__ = ["DEFAULT_BASE_URL", "OPENAI_KEY_ENV", "REDACTED", "Endpoint", "LiteralSecretError", "Redactor",
           "check_no_secrets", "default_url_refusal", "find_literal_secrets", "is_fake", "is_loopback", "resolve_endpoint", "without_keys"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""The one key variable whose key may go to :data:`DEFAULT_BASE_URL` when no base URL is set."""

_MISSING_KEYS: ContextVar[list[str] | None] = ContextVar("memrun_missing_keys", default=None)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FAKE = re.compile(r"(?<![a-z])(fake|stub|mock|dummy)(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True)
class Endpoint:
    """A resolved OpenAI-compatible endpoint.

    base_url: the API root (``.../v1``); api_key: never printed (``repr`` hides it);
    fake: True when the endpoint or config says it is a fake/stub provider;
    key_env: the variable the key came from (for messages; not part of equality);
    url_from: where the base URL came from, for messages (``reader.base_url``,
    ``$OPENAI_BASE_URL``, ``the default``; not part of equality).
    """

    base_url: str
    api_key: str = field(repr=False)
    fake: bool = False
    key_env: str | None = field(default=None, compare=False)
    url_from: str | None = field(default=None, compare=False)

    @cached_property
    def public_url(self) -> str:
        """The base URL without user info, query or fragment (safe to print; messages)."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    @cached_property
    def identity(self) -> str:
        """The endpoint as the call cache keys it and the instrument records it
        (``llm_endpoints``): :attr:`public_url`, then, when the base URL has a query (Azure's
        ``?api-version=``, a gateway's ``?route=``, which are sent with every call), that query
        with its values masked and a fingerprint of it as given
        (:func:`memrun.core.url_secrets.url_identity`). Two endpoints that differ only in a query
        value get different keys: one's cached replies are never read as the other's. Without a
        query it is :attr:`public_url` (the keys of existing caches are unchanged)."""
        query = urlsplit(self.base_url).query
        return self.public_url if not query else url_identity(f"{self.public_url}?{query}")


def is_fake(*names: str | None) -> bool:
    """True when a model name or URL says it is a fake, stub, mock or dummy provider."""
    return any(n and _FAKE.search(n) for n in names)


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def without_keys() -> Iterator[list[str]]:
    """Within it, :func:`resolve_endpoint` does not require the API keys it names (``memrun
    plan``, which makes no call): an endpoint whose key variable is unset gets no key, and
    one line saying so is added to the yielded list (for the plan's notes). Everything else
    (base URLs, where a key may go) is checked as for a run."""
    notes: list[str] = []
    token = _MISSING_KEYS.set(notes)
    try:
        yield notes
    finally:
        _MISSING_KEYS.reset(token)


def resolve_endpoint(
    where: str,
    *,
    model: str,
    base_url: str | None,
    base_url_env: str | None,
    api_key_env: str | None,
    provider: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Endpoint:
    """Resolve a config's endpoint; ``where`` names the config node in errors (``reader``).

    A fake provider (``provider: fake``, or a model or URL saying fake/stub/mock/dummy)
    never reads the key variable (its key is ``fake``) and must be pointed at its server:
    a ``base_url`` given in the config, or a loopback address.
    ``api_key_env`` None: a keyless OpenAI-compatible server (vLLM, Ollama, llama.cpp's
    server, LM Studio): no Authorization header is sent; refused for OpenAI's own API, and
    for a URL that only the environment names (a keyless config must say where it goes).
    A key goes only to the base URL it belongs to: OpenAI's API is the fallback for
    ``$OPENAI_API_KEY`` alone; any other key variable (a gateway's) needs its base URL set.
    Raises ConfigError (one line) when ``api_key_env`` is not a variable name, the URL
    carries user info (which the client could not send beside the key), a key other than
    OpenAI's would go to OpenAI's API because no base URL is set, the key variable is unset
    or empty (real providers; inside :func:`without_keys` noted instead), or a fake provider
    would reach another address than one given or on this machine (OpenAI's, or a
    gateway's from the environment).
    """
    if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
        raise ConfigError(
            f"{where}.api_key_env must name an environment variable (e.g. OPENAI_API_KEY), not a key"
        )
    from_env = environ.get(base_url_env) if base_url_env and not base_url else None
    url = base_url or from_env or DEFAULT_BASE_URL
    url_from = f"{where}.base_url" if base_url else f"${base_url_env}" if from_env else "the default"
    if has_userinfo(url):
        raise ConfigError(
            f"{url_from}: the URL carries a user name or password ({redact_urls(url)}); memrun sends the API key "
            f"as the Authorization header and cannot send URL credentials too: remove them from the URL and put "
            f"the credential in the variable {where}.api_key_env names (${api_key_env or 'OPENAI_API_KEY'})"
        )
    if problem := root_url_error(url, f"{where}.base_url" if base_url else f"${base_url_env}"):
        raise ConfigError(problem)
    fake = provider == "fake" or is_fake(model, url)
    if fake:
        if not base_url and not is_loopback(url):
            source = f"${base_url_env}" if url != DEFAULT_BASE_URL else "the default"
            raise ConfigError(
                f"{where}: a fake provider would send its requests to {url} ({source}); set {where}.base_url "
                "to the fake server's address (e.g. http://127.0.0.1:8000/v1)"
            )
        return Endpoint(base_url=url.rstrip("/"), api_key="fake", fake=True, url_from=url_from)
    if api_key_env is None:
        if url.rstrip("/") == DEFAULT_BASE_URL:
            raise ConfigError(
                f"{where}.api_key_env=null sends no key, so {where}.base_url must name your server "
                f"(e.g. http://127.0.0.1:11434/v1 for Ollama, :8000 vLLM, :8080 llama.cpp, :1234 LM Studio; "
                f"or {where}=local); OpenAI's API needs a key"
            )
        return Endpoint(base_url=url.rstrip("/"), api_key="", fake=False, key_env=None, url_from=url_from)
    if url_from == "the default" and (refusal := default_url_refusal(where, base_url_env, api_key_env)):
        raise ConfigError(refusal)
    key = environ.get(api_key_env, "")
    if not key:
        dest = (f"{url} ({url_from})" if url_from != "the default" else
                "OpenAI's API" + (f", as ${base_url_env} is not set" if base_url_env else ""))
        missing = f"{where}: no API key: ${api_key_env} ({where}.api_key_env) is not set; it is the key for {dest}"
        notes = _MISSING_KEYS.get()
        if notes is not None:  # memrun plan: no call is made; the run will need it
            notes.append(f"{missing}; a run needs it")
            return Endpoint(base_url=url.rstrip("/"), api_key="", fake=False, key_env=api_key_env, url_from=url_from)
        raise ConfigError(
            f"{missing}: export {api_key_env}=..., or set {where}.api_key_env to the variable that holds the key "
            f"(a keyless server on your own machine: {where}=local, docs/accuracy.md)"
        )
    return Endpoint(base_url=url.rstrip("/"), api_key=key, fake=False, key_env=api_key_env, url_from=url_from)


def default_url_refusal(where: str, base_url_env: str | None, api_key_env: str | None) -> str | None:
    """None when the key in ``$api_key_env`` may go to OpenAI's API for want of a base URL
    (OpenAI's own key, :data:`OPENAI_KEY_ENV`, or no key); else the one line refusing it,
    naming ``$base_url_env`` (the variable that would give the base URL; None: only
    ``{where}.base_url`` can) and the fix. Readers, judges and the embedder ask it."""
    if api_key_env in (None, OPENAI_KEY_ENV):
        return None
    if base_url_env:
        return (f"{where}: ${base_url_env} is not set, and the key in ${api_key_env} goes only to the server that "
                f"variable names, never to OpenAI's API (the default, for $OPENAI_API_KEY alone): export "
                f"{base_url_env}=<that server's API root, e.g. https://gateway.example.com/v1>, or set {where}.base_url")
    return (f"{where}.base_url is not set ({where}.base_url_env is null), and the key in ${api_key_env} goes only to "
            f"the server it belongs to, never to OpenAI's API (the default, for $OPENAI_API_KEY alone): set "
            f"{where}.base_url to that server's API root (OpenAI's: {where}.base_url={DEFAULT_BASE_URL})")
