"""Secrets in a run's config: which values are secret, refusing literal keys, and redacting
the rest from every file memrun writes and every line it prints.

The rule, in one place:

- **Refused** (:func:`check_no_secrets`): a literal key where memrun expects the name of
  an environment variable: a config key named like ``api_key``/``token``/``secret``/
  ``password``, a credential header (``Authorization``, ``Cookie``, a name with key,
  token or secret: :func:`is_auth_header`) in a ``headers`` mapping, and any string
  shaped like a provider key (``sk-...``).
- **Redacted** (:func:`config_secrets`, :func:`redact_config`, :class:`Redactor`): the
  user info and the query values of every URL (``http://user:password@host/?api_key=k``
  is saved and printed as ``http://***@host/?api_key=***``: :mod:`memrun.core.url_secrets`)
  and the value of every header in a ``headers`` mapping, unless the mapping's sibling
  ``public_headers`` list names it (``arm.public_headers: [Accept]``). Where they sit in a
  config they are replaced structurally, whatever their length (a URL's masked values
  are part of the node's fingerprint, as what a server is handed is); in free text
  (error lines, overrides, server replies) every such value of 8 or more characters is
  replaced (and its URL-encoded and base64 forms), as are the user info and query values
  of every URL found by its shape.
- **Masked** (:mod:`memrun.core.masking`): what memrun hands a server it starts, the values of
  an ``env`` mapping and the arguments after a flag in an ``args`` list, whatever their
  names: ``***`` where they sit, unless spelled ``${oc.env:NAME}`` (saved as spelled,
  never resolved); in free text, as the redacted values above.

A run builds one :class:`Redactor` from its config (:meth:`Redactor.for_config`) and
passes through it the saved config (``.hydra/``, the instrument), its rows' error
lines, its warnings and its error line.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from memrun.core import masking
from memrun.core.masking import ARGS, ENV, REDACTED
from memrun.core.url_secrets import redact_url, redact_urls, redact_userinfo, url_secrets
from memrun.errors import LiteralSecretError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import fcntl

    from hydra import types as hydra_types
    from hydra.core import hydra_config
    from hydra.core.override_parser import overrides_parser as hydra_overrides
else:
    fcntl = lazy("fcntl")  # POSIX only: loaded where a file is redacted in place, as before the import move
    hydra_config = lazy("hydra.core.hydra_config")
    hydra_types = lazy("hydra.types")
    hydra_overrides = lazy("hydra.core.override_parser.overrides_parser")

MIN_LENGTH = 8
"""Secrets shorter than this are not searched for in free text (too likely to occur by chance)."""

# Config keys whose value would be a secret; memrun never accepts one in a config.
_SECRET_KEY = re.compile(r"(^|_)(api_?key|token|secret|password)$", re.IGNORECASE)
# Header names whose value is a credential (arm.headers): Authorization, Proxy-Authorization,
# Cookie, X-Api-Key, X-Auth-Token, ... A token belongs in an environment variable.
_AUTH_HEADER = re.compile(r"authorization|cookie|key|token|secret", re.IGNORECASE)
# Strings shaped like provider keys (OpenAI, Anthropic, gateways): refused wherever they appear.
_KEY_SHAPE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|sk-ant-[A-Za-z0-9_\-]{16,})\b")
HEADERS, PUBLIC_HEADERS = "headers", "public_headers"


# A Hydra override in a launcher's line: "+arm.headers.X-Session=value", "arm.args=[a,b]".
_OVERRIDE_TOKEN = re.compile(r"(?<!\S)[+~]*[\w.-]+=\S+")


class LogRedactor(logging.Filter):
    """A logging filter for Hydra's own lines (a launcher prints each job's overrides):
    URL user info and query values, the values of header overrides and the masked values of ``env`` and
    ``args`` overrides (:func:`redact_override`) become ``***``. It knows no config, so it
    redacts every header given on the command line (``conf/config.yaml`` installs it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_line(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def redact_line(text: str) -> str:
    """A line that quotes overrides or URLs, known without their config (a launcher's line,
    a config error): every override in it as :func:`redact_override` with no config (every
    header value redacted) and every URL's user info and query values masked."""
    return redact_urls(_OVERRIDE_TOKEN.sub(lambda m: redact_override(m.group(0), {}), text))


def is_auth_header(name: str) -> bool:
    """True for a header whose value is a credential: Authorization, Proxy-Authorization,
    Cookie, or a name containing key, token or secret (any case)."""
    return bool(_AUTH_HEADER.search(name))


def _public(node: Mapping[str, Any]) -> set[str]:
    """The header names (lower case) that ``node``'s ``public_headers`` list marks public."""
    names = node.get(PUBLIC_HEADERS) or []
    return {str(n).lower() for n in names} if isinstance(names, (list, tuple)) else set()


def config_secrets(node: Any) -> Iterator[str]:
    """Every secret value in a config tree (plain dicts and lists): the user info and query
    values of each URL (:func:`memrun.core.url_secrets.url_secrets`), each header value not marked public, and what a started server is handed (the
    values of ``env`` and the arguments after a flag in ``args``: :mod:`memrun.core.masking`)."""
    if isinstance(node, Mapping):
        public = _public(node)
        for key, value in node.items():
            if key == HEADERS and isinstance(value, Mapping):
                yield from (str(v) for k, v in value.items() if str(k).lower() not in public and v not in (None, ""))
                continue
            if key == ENV:
                yield from masking.secret_values(value, ())
            elif key == ARGS:
                yield from masking.secret_values({}, value)
            yield from config_secrets(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            yield from config_secrets(value)
    elif isinstance(node, str):
        yield from url_secrets(node)


def redact_override(override: str, container: Any) -> str:
    """One Hydra override (``[+~]key=value``) with its secrets replaced: the value of a
    header not marked public in ``container`` (the config, plain dicts), or of a whole
    ``headers`` mapping; the values of an ``env`` override and those after a flag in an
    ``args`` override (:mod:`memrun.core.masking`; kept when spelled ``${oc.env:NAME}``); and the
    user info and query values of any URL (:mod:`memrun.core.url_secrets`)."""
    key, sep, value = override.partition("=")
    path = key.lstrip("+~").split(".")
    if sep and HEADERS in path[:-1] or (sep and path[-1] == HEADERS):
        at = path.index(HEADERS)
        node: Any = container
        for part in path[:at]:
            node = node.get(part) if isinstance(node, Mapping) else None
        public = _public(node) if isinstance(node, Mapping) else set()
        if not (at == len(path) - 2 and path[-1].lower() in public):
            return f"{key}={REDACTED}"
    if sep and (ENV in path or ARGS in path[:-1]) and not masking.spelled(value):
        return f"{key}={REDACTED}"  # a variable, a mapping of them, or one argument (a flag's value or not)
    if sep and path[-1] == ARGS:
        return f"{key}={_masked_list_override(value)}"
    quote_ = value[:1] if len(value) > 1 and value[:1] in "'\"" and value[-1:] == value[:1] else ""
    inner = value[1:-1] if quote_ else value
    return redact_urls(f"{key}{sep}{quote_}{redact_url(inner)[0]}{quote_}")


def may_hold_secret(override: str) -> bool:
    """Whether an override line (``[+~]key=value``) may carry a secret, so that no cache keeps
    it: :func:`redact_override` masks part of it (a header, ``env``, ``args``, a URL's user
    info or query), a part of its key is named like a secret or an auth header (``api_key``,
    ``token``, ``cookie``...), or it holds a provider key's shape (``sk-...``)."""
    key = override.partition("=")[0].lstrip("+~")
    return (redact_override(override, {}) != override or bool(_KEY_SHAPE.search(override))
            or any(_SECRET_KEY.search(part) or _AUTH_HEADER.search(part) for part in key.split(".")))


def _masked_list_override(value: str) -> str:
    """An ``args`` override's value (``[a,--token,tok]``) with the values after a flag masked."""
    try:
        parsed = hydra_overrides.OverridesParser.create().parse_override(f"args={value}").value()
    except Exception:  # noqa: BLE001 - not a list Hydra reads: nothing of it is shown
        return REDACTED
    if not isinstance(parsed, list):
        return REDACTED if parsed not in (None, "") else value
    shown, _ = masking.mask_args([str(a) for a in parsed])
    return "[" + ",".join(redact_url(a)[0] for a in shown) + "]"


_SAME = object()


def redact_config(node: Any, spelling: Any = _SAME, fingerprints: bool = False) -> Any:
    """A copy of a config tree (plain dicts and lists) with every secret of
    :func:`config_secrets` replaced by ``***`` where it sits.

    spelling: the same tree unresolved (``OmegaConf.to_container(cfg, resolve=False)``)
    when ``node`` is resolved: a header, ``env`` value or argument spelled with an
    interpolation (``${oc.env:NAME}``) is then saved as spelled, not as its value (a URL
    with masked parts too: :func:`_saved_string`). Omitted: ``node`` itself (a tree that is
    not resolved). fingerprints: add :data:`memrun.core.masking.FINGERPRINT_KEY` to a
    mapping that holds masked ``env``/``args`` values or URL parts (the instrument's copy,
    which tells configurations apart).
    """
    spelling = node if spelling is _SAME else spelling
    if isinstance(node, Mapping):
        public = _public(node)
        raw = spelling if isinstance(spelling, Mapping) else {}
        out: dict[Any, Any] = {}
        masked: list[str] = []
        for key, value in node.items():
            as_spelled = raw.get(key)
            if key == HEADERS and isinstance(value, Mapping):
                written = as_spelled if isinstance(as_spelled, Mapping) else {}
                out[key] = {k: written.get(k) if masking.spelled(written.get(k)) else
                            v if str(k).lower() in public or v in (None, "") else REDACTED for k, v in value.items()}
            elif key == ENV and isinstance(value, Mapping):
                out[key], found = masking.mask_env(value, as_spelled)
                masked += [f"{ENV}.{m}" for m in found]
            elif key == ARGS and isinstance(value, (list, tuple)):
                shown, found = masking.mask_args(list(value), as_spelled)
                saved = [redact_url(a) if isinstance(a, str) and not masking.spelled(a) else (a, []) for a in shown]
                out[key] = [arg for arg, _ in saved]
                masked += found + [part for _, parts in saved for part in parts]
            elif isinstance(value, str):
                out[key], found = _saved_string(value, as_spelled)
                masked += [f"{key}={m}" for m in found]
            else:
                out[key] = redact_config(value, as_spelled, fingerprints)
        if masked and fingerprints:
            out[masking.FINGERPRINT_KEY] = masking.fingerprint(masked)
        return out
    if isinstance(node, (list, tuple)):
        items = spelling if isinstance(spelling, (list, tuple)) and len(spelling) == len(node) else [None] * len(node)
        return [redact_config(v, s, fingerprints) for v, s in zip(node, items, strict=True)]
    return _saved_string(node, spelling)[0] if isinstance(node, str) else node


def _saved_string(value: str, spelling: Any) -> tuple[str, list[str]]:
    """A config string as saved and the literal values masked in it: its URL secrets
    masked (:func:`memrun.core.url_secrets.redact_url`); when some were and the string was
    spelled with an interpolation (``spelling``: the unresolved string), the spelling so
    masked, as ``env`` values are (``?token=${oc.env:T}`` is saved as spelled and is no
    literal of the fingerprint)."""
    shown, found = redact_url(value)
    if found and masking.spelled(spelling) and spelling != value:
        return redact_url(spelling)
    return shown, found


def redact_hydra(hydra: Mapping[str, Any], container: Any) -> dict[str, Any]:
    """A copy of Hydra's own config (the ``hydra`` node, plain dicts) with its secrets
    replaced: those of :func:`redact_config`, and in the overrides (``overrides.task``,
    ``overrides.hydra``, ``job.override_dirname``) those of :func:`redact_override`
    against ``container``, the job's config (plain dicts; ``{}`` when unknown: every
    header override is then redacted)."""
    out = redact_config(hydra)
    overrides = out.get("overrides") if isinstance(out.get("overrides"), dict) else {}
    for name in ("task", "hydra"):
        if isinstance(overrides.get(name), list):
            overrides[name] = [redact_override(str(o), container) for o in overrides[name]]
    job = out.get("job") if isinstance(out.get("job"), dict) else {}
    if isinstance(job.get("override_dirname"), str):
        job["override_dirname"] = ",".join(redact_override(o, container) for o in job["override_dirname"].split(",") if o)
    return out


class Redactor:
    """Replaces known secret values, key-shaped strings and URL user info and query values with ``***`` in
    strings, row dicts and files.

    secrets: registered with :meth:`add` (those shorter than :data:`MIN_LENGTH` are skipped).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        for s in secrets:
            self.add(s)

    @classmethod
    def for_config(cls, container: Any) -> Redactor:
        """A redactor of every secret of a config tree (plain dicts; :func:`config_secrets`)."""
        return cls().add_config(container)

    def add_config(self, container: Any) -> Redactor:
        """Register every secret of a config tree (plain dicts; :func:`config_secrets`); returns self."""
        for secret in config_secrets(container):
            self.add(secret)
        return self

    def add(self, secret: str, min_length: int = MIN_LENGTH) -> None:
        """Register ``secret`` (ignored when shorter than ``min_length`` characters), with its
        URL-encoded and base64 forms (a value sent in a query string or a Basic header)."""
        if not secret or len(secret) < min_length:
            return
        forms = {secret, quote(secret, safe=""), base64.b64encode(secret.encode()).decode().rstrip("=")}
        if forms - set(self._secrets):
            self._secrets.extend(forms - set(self._secrets))
            self._secrets.sort(key=len, reverse=True)

    def extend(self, other: Redactor) -> Redactor:
        """Register every secret ``other`` knows too; returns self."""
        known = set(self._secrets)
        self._secrets += [s for s in other._secrets if s not in known]
        self._secrets.sort(key=len, reverse=True)
        return self

    def text(self, value: str) -> str:
        """``value`` (memrun's own line: an error, a warning, a saved file) with every
        registered secret, key-shaped string and URL user info and query value replaced."""
        return redact_urls(self._known(value))

    def reply(self, value: str) -> str:
        """A model's or a server's reply: every registered secret (the config's query values
        among them), key-shaped string and URL user info replaced, but not every URL's query
        values by their shape (:meth:`text`): the URLs a reader answers with are what was
        measured, and masking them would change the answer a judge grades."""
        return redact_userinfo(self._known(value))

    def _known(self, value: str) -> str:
        for s in self._secrets:
            if s in value:
                value = value.replace(s, REDACTED)
        # every key shape starts "sk-": a text without it (most replies) skips the regex
        return _KEY_SHAPE.sub(REDACTED, value) if "sk-" in value else value

    def row(self, row: dict[str, Any], keys: Iterable[str], replies: bool = False) -> dict[str, Any]:
        """The row with its str values under ``keys`` redacted in place, as :meth:`reply`
        when ``replies`` (a model's texts), else as :meth:`text` (memrun's own lines)."""
        clean = self.reply if replies else self.text
        for k in keys:
            if isinstance(row.get(k), str):
                row[k] = clean(row[k])
        return row

    def files(self, folder: Path) -> int:
        """Redact every text file under ``folder`` in place; returns how many changed."""
        return sum(self.file(path) for path in folder.rglob("*")
                   if path.is_file() and path.suffix in {".yaml", ".yml", ".log", ".json", ".txt"})

    def file(self, path: Path) -> bool:
        """Redact one text file in place, under a lock (the jobs of a sweep share its
        ``multirun.yaml``); True when it changed (unreadable files are left)."""
        try:
            with open(path, "r+", encoding="utf-8") as handle:  # noqa: PTH123
                fcntl.flock(handle, fcntl.LOCK_EX)
                text = handle.read()
                clean = self.text(text)
                if clean != text:
                    handle.seek(0)
                    handle.write(clean)
                    handle.truncate()
        except (OSError, UnicodeDecodeError):
            return False
        return clean != text


def find_literal_secrets(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted path, value)`` of config values that are, or look like, literal secrets.

    A key named like ``api_key``/``token``/``secret``/``password`` holding a string, an
    auth-like header in a ``headers`` mapping (:func:`is_auth_header`) holding one, or
    any string shaped like a provider key (``sk-...``), is reported. ``*_env`` keys hold
    variable names and are fine. What a started server is handed (``env``, ``args``) is
    never refused: it is masked wherever memrun writes it (:mod:`memrun.core.masking`), and an
    ``${oc.env:NAME}`` there resolves to whatever the variable holds.
    """
    if isinstance(node, Mapping):
        in_headers = path.rsplit(".", 1)[-1] == HEADERS
        for k, v in node.items():
            sub = f"{path}.{k}" if path else str(k)
            if k in (ENV, ARGS):
                continue
            named = is_auth_header(str(k)) if in_headers else bool(_SECRET_KEY.search(str(k)))
            if isinstance(v, str) and v and named and not str(k).endswith("_env"):
                yield sub, v
            else:
                yield from find_literal_secrets(v, sub)
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            yield from find_literal_secrets(v, f"{path}[{i}]")
    elif isinstance(node, str) and (m := _KEY_SHAPE.search(node)):
        yield path or "<value>", m.group(0)


def scrub_secrets(error: LiteralSecretError, run_dir: Path, sweep_dir: Path | None = None) -> None:
    """Redact ``error.values`` from the files Hydra already wrote: the run folder's
    (``.hydra/config.yaml``, ``overrides.yaml``, ``memrun.log``) and, in a sweep, the
    sweep folder's ``multirun.yaml`` (``sweep_dir``; None: the run folder's parent).
    Every value is redacted, however short."""
    redactor = Redactor()
    for value in error.values:
        redactor.add(value, min_length=1)
    scrub_files(redactor, run_dir, sweep_dir)


def scrub_hydra_job(error: LiteralSecretError) -> None:
    """:func:`scrub_secrets` the folders of the Hydra job in progress, if there is one."""
    if folders := hydra_job_folders():
        scrub_secrets(error, *folders)


def scrub_files(redactor: Redactor, run_dir: Path, sweep_dir: Path | None = None) -> None:
    """Redact the text files of ``run_dir`` and the sweep's ``multirun.yaml`` (``sweep_dir``;
    None: the run folder's parent), which Hydra writes before any job runs."""
    if run_dir.is_dir():
        redactor.files(run_dir)
    sweep = (sweep_dir or run_dir.parent) / "multirun.yaml"
    if sweep.is_file():
        redactor.file(sweep)


def hydra_job_folders() -> tuple[Path, Path | None] | None:
    """(run folder, sweep folder or None) of the Hydra job in progress; None without one."""
    if not hydra_config.HydraConfig.initialized():
        return None
    hydra = hydra_config.HydraConfig.get()
    try:
        run_dir = Path(hydra.runtime.output_dir)
    except Exception:  # noqa: BLE001 - composed without a job (calibrate-judge): nothing was written
        return None
    return run_dir, Path(hydra.sweep.dir) if hydra.mode == hydra_types.RunMode.MULTIRUN else None


def check_no_secrets(container: dict[str, Any]) -> dict[str, Any]:
    """Refuse a config (resolved, as plain dicts: :func:`memrun.config.compose.resolved`) that
    carries a literal API key (memrun reads keys from the environment); return it (for
    :meth:`Redactor.add_config`, :func:`redact_config`).

    Raises LiteralSecretError naming the first offending key, after redacting the values
    from what Hydra already wrote for the job in progress (:func:`scrub_hydra_job`).
    """
    found = list(find_literal_secrets(container))
    if not found:
        return container
    path, _ = found[0]
    node, _, header = path.rpartition(".headers.")
    if node:
        message = (f"{path}: a credential in a header would be saved with the run; remove it, export it as an "
                   f"environment variable, name that variable with {node}.auth_token_env and set "
                   f"{node}.auth_header={header} ({node}.auth_scheme='' sends the bare value)")
    else:
        message = (f"{path}: a literal key or token in the config would be saved with the run; remove it, "
                   "export it as an environment variable and name that variable with api_key_env")
    error = LiteralSecretError(message, [value for _, value in found] + list(config_secrets(container)))
    scrub_hydra_job(error)
    raise error
