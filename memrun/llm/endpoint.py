"""Where LLM calls go, the keys they carry, and keeping those keys out of every file.

memrun reads API keys only from the environment: a reader or judge config names the
variable (``api_key_env``, default ``OPENAI_API_KEY``), never the key. The base URL comes
from the config (``base_url``), else from the variable named by ``base_url_env`` (default
``OPENAI_BASE_URL``), else OpenAI's. Every string memrun writes from an LLM exchange
(error bodies, judge explanations) passes through :class:`Redactor`, which replaces the
keys in use with ``***``; :func:`find_literal_secrets` refuses configs that carry a key.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memrun.errors import ConfigError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
REDACTED = "***"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FAKE = re.compile(r"(?<![a-z])(fake|stub|mock|dummy)(?![a-z])", re.IGNORECASE)
# Config keys whose value would be a secret; memrun never accepts one in a config.
_SECRET_KEY = re.compile(r"(^|_)(api_?key|token|secret|password)$", re.IGNORECASE)
# Header names whose value is a credential (arm.headers): Authorization, Proxy-Authorization,
# Cookie, X-Api-Key, X-Auth-Token, ... A token belongs in an environment variable.
_AUTH_HEADER = re.compile(r"authorization|cookie|key|token|secret", re.IGNORECASE)
# Strings shaped like provider keys (OpenAI, Anthropic, gateways): refused wherever they appear.
_KEY_SHAPE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|sk-ant-[A-Za-z0-9_\-]{16,})\b")


@dataclass(frozen=True)
class Endpoint:
    """A resolved OpenAI-compatible endpoint.

    base_url: the API root (``.../v1``); api_key: never printed (``repr`` hides it);
    fake: True when the endpoint or config says it is a fake/stub provider;
    key_env: the variable the key came from (for messages; not part of equality).
    """

    base_url: str
    api_key: str = field(repr=False)
    fake: bool = False
    key_env: str | None = field(default=None, compare=False)

    @cached_property
    def public_url(self) -> str:
        """The base URL without user info, query or fragment (safe to record)."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))


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


def resolve_endpoint(
    where: str,
    *,
    model: str,
    base_url: str | None,
    base_url_env: str | None,
    api_key_env: str,
    provider: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Endpoint:
    """Resolve a config's endpoint; ``where`` names the config node in errors (``reader``).

    A fake provider (``provider: fake``, or a model or URL saying fake/stub/mock/dummy)
    never reads the key variable (its key is ``fake``) and must be pointed at its server:
    a ``base_url`` given in the config, or a loopback address.
    Raises ConfigError (one line) when ``api_key_env`` is not a variable name, the
    variable is unset or empty (real providers), or a fake provider would reach another
    address than one given or on this machine (OpenAI's, or a gateway's from the environment).
    """
    if not _ENV_NAME.fullmatch(api_key_env or ""):
        raise ConfigError(
            f"{where}.api_key_env must name an environment variable (e.g. OPENAI_API_KEY), not a key"
        )
    url = base_url or (environ.get(base_url_env) if base_url_env else None) or DEFAULT_BASE_URL
    fake = provider == "fake" or is_fake(model, url)
    if fake:
        if not base_url and not is_loopback(url):
            source = f"${base_url_env}" if url != DEFAULT_BASE_URL else "the default"
            raise ConfigError(
                f"{where}: a fake provider would send its requests to {url} ({source}); set {where}.base_url "
                "to the fake server's address (e.g. http://127.0.0.1:8000/v1)"
            )
        return Endpoint(base_url=url.rstrip("/"), api_key="fake", fake=True)
    key = environ.get(api_key_env, "")
    if not key:
        raise ConfigError(
            f"{where}: no API key: ${api_key_env} is not set; export it, or set "
            f"{where}.api_key_env to the variable that holds the key"
        )
    return Endpoint(base_url=url.rstrip("/"), api_key=key, fake=False, key_env=api_key_env)


def find_literal_secrets(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted path, value)`` of config values that are, or look like, literal secrets.

    A key named like ``api_key``/``token``/``secret``/``password`` holding a string, an
    auth-like header in a ``headers`` mapping (:func:`is_auth_header`) holding one, or
    any string shaped like a provider key (``sk-...``), is reported. ``*_env`` keys hold
    variable names and are fine.
    """
    if isinstance(node, Mapping):
        in_headers = path.rsplit(".", 1)[-1] == "headers"
        for k, v in node.items():
            sub = f"{path}.{k}" if path else str(k)
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


def is_auth_header(name: str) -> bool:
    """True for a header whose value is a credential: Authorization, Proxy-Authorization,
    Cookie, or a name containing key, token or secret (any case)."""
    return bool(_AUTH_HEADER.search(name))


class Redactor:
    """Replaces known secret values with ``***`` in strings and row dicts.

    Secrets shorter than 8 characters are not registered (too likely to occur by chance).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        for s in secrets:
            self.add(s)

    def add(self, secret: str, min_length: int = 8) -> None:
        """Register ``secret`` (ignored when shorter than ``min_length`` characters)."""
        if secret and len(secret) >= min_length and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

    def text(self, value: str) -> str:
        """``value`` with every registered secret and key-shaped string replaced."""
        for s in self._secrets:
            if s in value:
                value = value.replace(s, REDACTED)
        return _KEY_SHAPE.sub(REDACTED, value)

    def row(self, row: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
        """The row with its str values under ``keys`` redacted, in place."""
        for k in keys:
            if isinstance(row.get(k), str):
                row[k] = self.text(row[k])
        return row

    def files(self, folder: Path) -> int:
        """Redact every text file under ``folder`` in place; returns how many changed."""
        return sum(self.file(path) for path in folder.rglob("*")
                   if path.is_file() and path.suffix in {".yaml", ".yml", ".log", ".json", ".txt"})

    def file(self, path: Path) -> bool:
        """Redact one text file in place; True when it changed (unreadable files are left)."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        clean = self.text(text)
        if clean != text:
            path.write_text(clean, encoding="utf-8")
        return clean != text


class LiteralSecretError(ConfigError):
    """The config carries a literal key; ``values`` are the secrets to redact from files already written."""

    def __init__(self, message: str, values: list[str]) -> None:
        super().__init__(message)
        self.values = values

    def scrub(self, run_dir: Path, sweep_dir: Path | None = None) -> None:
        """Redact the secrets from the files Hydra already wrote: the run folder's
        (``.hydra/config.yaml``, ``overrides.yaml``, ``memrun.log``) and, in a sweep, the
        sweep folder's ``multirun.yaml`` (``sweep_dir``; None: the run folder's parent).
        Every value is redacted, however short."""
        redactor = Redactor()
        for value in self.values:
            redactor.add(value, min_length=1)
        if run_dir.is_dir():
            redactor.files(run_dir)
        sweep = (sweep_dir or run_dir.parent) / "multirun.yaml"
        if sweep.is_file():
            redactor.file(sweep)

    def scrub_hydra_job(self) -> None:
        """:meth:`scrub` the folders of the Hydra job in progress, if there is one."""
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if not HydraConfig.initialized():
            return
        hydra = HydraConfig.get()
        try:
            run_dir = Path(hydra.runtime.output_dir)
        except Exception:  # noqa: BLE001 - composed without a job (calibrate-judge): nothing was written
            return
        self.scrub(run_dir, Path(hydra.sweep.dir) if hydra.mode == RunMode.MULTIRUN else None)


def check_no_secrets(cfg: Any) -> None:
    """Refuse a config that carries a literal API key (memrun reads keys from the environment).

    Raises LiteralSecretError naming the first offending key, after redacting the values
    from what Hydra already wrote for the job in progress (:meth:`LiteralSecretError.scrub_hydra_job`).
    """
    from omegaconf import OmegaConf

    found = list(find_literal_secrets(OmegaConf.to_container(cfg, resolve=True)))
    if found:
        path, _ = found[0]
        node, _, header = path.rpartition(".headers.")
        if node:
            message = (f"{path}: a credential in a header would be saved with the run; remove it, export it as an "
                       f"environment variable, name that variable with {node}.auth_token_env and set "
                       f"{node}.auth_header={header} ({node}.auth_scheme='' sends the bare value)")
        else:
            message = (f"{path}: a literal key or token in the config would be saved with the run; remove it, "
                       "export it as an environment variable and name that variable with api_key_env")
        error = LiteralSecretError(message, [value for _, value in found])
        error.scrub_hydra_job()
        raise error
