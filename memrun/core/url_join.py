"""A request URL from a configured root URL and a path: the root's query is sent too.

A root URL (``reader.base_url``, ``arm.base_url``, ``arm.embedder.base_url``) may carry a
query a server needs on every request: Azure OpenAI's ``?api-version=...``, a gateway's
``?api_key=...``. Gluing a path onto the string (``root + "/chat/completions"``) put the
path inside the query, and ``urljoin(root, path)`` drops the query: either way the server
never saw it and nothing said so. :func:`join_url` keeps it: the path is joined to the
root's path, and the query sent is the root's, then the path's own.

A fragment (``#...``) is never sent over HTTP by any client; a root that has one is a
mistake the user should hear about (:func:`root_url_error`), not a value to drop quietly.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit, urlunsplit

from memrun.core.url_secrets import redact_urls


def join_url(root: str, path: str) -> str:
    """``path`` under ``root``'s path, with ``root``'s query first and then ``path``'s.

    ``join_url("http://h/v1?api-version=1", "chat/completions")`` is
    ``"http://h/v1/chat/completions?api-version=1"``; a leading ``/`` on ``path`` does not
    climb to the host's root (``"/search?k=5"`` under ``http://h/api/`` is ``/api/search``).
    The root's fragment is not part of the result (see :func:`root_url_error`).
    """
    parts = urlsplit(root)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
    joined = urlsplit(urljoin(base, path.lstrip("/")))
    query = "&".join(q for q in (parts.query, joined.query) if q)
    return urlunsplit((joined.scheme, joined.netloc, joined.path, query, joined.fragment))


def root_url_error(url: str, where: str) -> str | None:
    """The one-line message for a root URL no HTTP client can send to, or None when it is fine:
    no ``http``/``https`` scheme or no host (``notaurl``, ``localhost:8000/v1``: every request
    would fail alike, one error row per item), or a fragment.

    where: the config key or variable the URL came from (``arm.base_url``). The URL in the
    message is masked (:func:`memrun.core.url_secrets.redact_urls`)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return (f"{where}={redact_urls(url)}: not an http(s) URL with a host; give the server's root, e.g. "
                "http://127.0.0.1:8000/v1")
    if "#" not in url:
        return None
    return (f"{where}: {redact_urls(url)} has a fragment ('#...'), which no HTTP client sends; "
            f"remove it (a key the server needs on every request goes in the query or a header)")
