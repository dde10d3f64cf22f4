"""What in a URL is secret, and the URL as memrun saves and prints it.

Two parts of a URL carry credentials in practice: the user info
(``https://user:password@host``) and the query string (``?api_key=...``, ``?token=...``,
a signed URL's ``&sig=...``). memrun cannot know which query parameters are secret, so it
does not guess from their names (as it does not for a server's ``env``:
:mod:`memrun.core.masking`). The rule:

- the user info of every URL becomes ``***`` (``http://***@host``);
- the value of every query parameter becomes ``***`` (``?api_key=***&top=***``); its
  name stays readable. A value that is a template (``{{ namespace }}``, rendered per
  request) or an interpolation (``${oc.env:TOKEN}``, saved as spelled) is kept;
- a fragment of ``name=value`` pairs is read as a query (OAuth's implicit grant returns
  ``#access_token=...``); a plain fragment (``#part``) stays;
- scheme, host, port and path stay readable, and so does a query part without ``=``
  (``?debug``): memrun does not guess which bare words are secret.

Where a config is kept to tell configurations apart (the instrument), the masked values
are part of the node's ``masked_fingerprint`` (:func:`memrun.core.redaction.redact_config`),
so two runs whose URLs differ only in a query value do not look alike.

A config value is rewritten as a whole (:func:`redact_url`: a template with spaces in its
query is one URL); in free text (error lines, logs, Hydra's files, overrides) each URL is
found by its shape (:func:`redact_urls`): a token starting ``scheme://`` or ``/`` up to
whitespace, a quote or an angle bracket, and any ``name=value`` that follows ``?`` or
``&`` right after another character; its fragment, when it holds ``=``, likewise.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from memrun.core.masking import REDACTED, fingerprint

# The user info of a URL: after "scheme://", before "@", within the authority.
_USERINFO = re.compile(r"(?<=://)[^/\s?#'\"<>]+@")
# A URL or an absolute path with a query, in free text: (prefix, query).
_URL_QUERY = re.compile(r"(?<![\w.+-])((?:[A-Za-z][A-Za-z0-9+.-]*:)?/[^\s'\"<>?#]*)\?([^\s'\"<>#]+)")
# The same with a fragment of name=value pairs: (everything before "#", fragment).
_URL_FRAGMENT = re.compile(r"(?<![\w.+-])((?:[A-Za-z][A-Za-z0-9+.-]*:)?/[^\s'\"<>#]*)#([^\s'\"<>#]*=[^\s'\"<>#]*)")
# Any name=value after "?" or "&" that follows another character (a URL cut by a template's spaces).
_PAIR = re.compile(r"(?<=\S[?&])([^\s'\"<>&#=?]+=)(?!\{\{|\$\{|\*\*\*)[^\s'\"<>&#]+")
# A config value that is a URL or an absolute path with a query, once its templates are
# taken out (they may hold spaces; nothing else in a URL does: not a prompt).
_URL_VALUE = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|/)[^\s?#]*[?#]\S*")
# A URL value's parts: (before "?" or "#", query, fragment).
_PARTS = re.compile(r"([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S)
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
# A value kept as written: a Jinja template or an OmegaConf interpolation (in free text,
# cut at the template's first space).
_KEPT = ("{{", "${")


def redact_userinfo(text: str) -> str:
    """``text`` with the user info of every URL in it masked, its queries kept (a reply's
    URLs: :meth:`memrun.core.redaction.Redactor.reply`). A text without ``://`` (most
    replies) has no URL user info, and is returned without running the pattern."""
    return _USERINFO.sub(f"{REDACTED}@", text) if "://" in text else text


def has_userinfo(text: str) -> bool:
    """True when a URL in ``text`` carries user info (a user name or password)."""
    return bool(_USERINFO.search(text))


def _query(query: str) -> tuple[str, list[str]]:
    """A query string (after ``?``, before ``#``; or a fragment of pairs) with each value
    masked, and the masked values."""
    parts, found = [], []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        if not eq or not value or value == REDACTED or value.lstrip().startswith(_KEPT):
            parts.append(part)  # a bare flag (?debug) or an empty, masked or templated value
        else:
            parts.append(f"{name}={REDACTED}")
            found.append(value)
    return "&".join(parts), found


def _split(value: str) -> tuple[str, list[str], list[str]]:
    """(``value`` as saved, the user infos masked in it, the query values masked in it)."""
    infos = [m.group(0)[:-1] for m in _USERINFO.finditer(value)]
    shown = _USERINFO.sub(f"{REDACTED}@", value)
    values: list[str] = []
    core = shown.rstrip()
    if _URL_VALUE.fullmatch(_TEMPLATE.sub("", core.lstrip())):
        head, query, fragment = _PARTS.fullmatch(core).groups()  # type: ignore[union-attr]
        if query is not None:
            query, values = _query(query)
            head += f"?{query}"
        if fragment is not None:
            if "=" in fragment:
                fragment, more = _query(fragment)
                values += more
            head += f"#{fragment}"
        shown = f"{head}{shown[len(core):]}"
    return shown, infos, values


def redact_url(value: str) -> tuple[str, list[str]]:
    """A config value as saved, its URL user info and query values masked (module
    docstring), and the literal values masked (each user info whole, then the query's
    values) for the fingerprint. A value that is not a URL comes back unchanged except
    for user info; the query of ``/path?q={{ query }}&key=k`` is read whole."""
    shown, infos, values = _split(value)
    return shown, infos + values


def url_secrets(value: str) -> list[str]:
    """The secret strings of a config value (:func:`redact_url`) as the free-text redactor
    searches for them elsewhere: each user info whole and its password alone, each query
    value, each as written and percent-decoded."""
    _, infos, values = _split(value)
    out = []
    for info in infos:
        password = info.partition(":")[2]
        out += [info] + ([password, unquote(password)] if password else [])
    for secret in values:
        out += [secret, unquote(secret)]
    return list(dict.fromkeys(out))


def redact_urls(text: str) -> str:
    """Free text with the user info and the query values of every URL in it masked
    (module docstring)."""
    text = _USERINFO.sub(f"{REDACTED}@", text)
    if "?" not in text and "&" not in text and "#" not in text:
        return text
    text = _URL_QUERY.sub(lambda m: f"{m.group(1)}?{_query(m.group(2))[0]}", text)
    if "#" in text:
        text = _URL_FRAGMENT.sub(lambda m: f"{m.group(1)}#{_query(m.group(2))[0]}", text)
    return _PAIR.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def url_identity(url: str) -> str:
    """A server's URL as a key that can be saved and compared across runs: the URL as shown
    (:func:`redact_urls`), followed by `` [pbkdf2:...]``, a fingerprint of the URL as given
    (:func:`memrun.core.masking.fingerprint`), when masking hid anything. Two servers whose
    URLs differ only in a masked value (``?ns=a``, ``?ns=b``) get different keys."""
    shown = redact_urls(url)
    return shown if shown == url else f"{shown} [{fingerprint([url])}]"
