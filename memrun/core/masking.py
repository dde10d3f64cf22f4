"""What memrun hands a server process it starts, kept off disk: the values of an ``env``
mapping and of the arguments that follow a flag in an ``args`` list.

memrun cannot know which of a server's variables and arguments are secret, so it does
not guess from their names. The rule, for every config node (``arm=mcp``'s ``env`` and
``args``, a Python arm's, any other):

- a value spelled as an interpolation (``${oc.env:NAME}``) is saved and printed as
  spelled, never resolved: the documented way to hand a server a secret;
- every other value of ``env``, and every argument that follows a flag (``--token tok``,
  ``-k tok``, ``--token=tok``), is saved and printed as ``***``;
- the command, the flags and plain positional arguments stay readable.

Where a config is kept to tell two configurations apart (the instrument), the node that
held masked values gets :data:`FINGERPRINT_KEY`: a slow, salted hash of those literal
values together (:func:`fingerprint`), so two runs that differ only in a masked value do
not look alike, while the value itself cannot be read back.

:mod:`memrun.core.redaction` applies the rule to configs, overrides and free text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

REDACTED = "***"
ENV, ARGS = "env", "args"
FINGERPRINT_KEY = "masked_fingerprint"
"""The instrument's key, beside a node's ``env``/``args``, for the fingerprint of its masked values."""
_SALT, _ROUNDS = b"memrun masked values v1", 20_000


def spelled(value: Any) -> bool:
    """True for a string that holds an interpolation (``${oc.env:NAME}``): saved as spelled."""
    return isinstance(value, str) and "${" in value


def is_flag(arg: str) -> bool:
    """True for ``-x``, ``--name`` (and ``--name=value``), not for ``-`` or a negative number."""
    if len(arg) < 2 or not arg.startswith("-"):
        return False
    try:
        float(arg)
    except ValueError:
        return True
    return False


def flag_values(args: Sequence[Any]) -> Iterator[tuple[int, str, str]]:
    """``(index, prefix, value)`` of each value that follows a flag in ``args``: the whole
    argument after a flag without ``=`` (prefix ``''``), or what follows ``=`` in
    ``--name=value`` (prefix ``--name=``). Empty values are left out."""
    after_flag = False
    for i, raw in enumerate(args):
        arg = str(raw)
        if after_flag and not is_flag(arg):
            after_flag = False
            if arg:
                yield i, "", arg
            continue
        flag, eq, value = arg.partition("=")
        if is_flag(arg) and eq:
            after_flag = False
            if value:
                yield i, flag + eq, value
        else:
            after_flag = is_flag(arg)


def mask_args(args: Sequence[Any], spelling: Sequence[Any] | None = None) -> tuple[list[Any], list[str]]:
    """``args`` as saved, and the literal values masked in it.

    ``spelling``: the same list unresolved (``${oc.env:NAME}`` as written); an argument
    spelled with an interpolation is kept as spelled, whatever its place. Each other
    argument that follows a flag (:func:`flag_values`) becomes ``***``.
    """
    spelling = list(spelling) if isinstance(spelling, Sequence) and not isinstance(spelling, str) else list(args)
    if len(spelling) != len(args):
        spelling = list(args)
    out: list[Any] = [s if spelled(s) else a for a, s in zip(args, spelling, strict=True)]
    masked = []
    for i, prefix, value in flag_values(args):
        if spelled(spelling[i]):
            continue
        masked.append(value)
        out[i] = f"{prefix}{REDACTED}"
    return out, masked


def mask_env(env: Mapping[str, Any], spelling: Any = None) -> tuple[dict[str, Any], list[str]]:
    """``env`` as saved (each value ``***``, unless spelled with an interpolation in
    ``spelling``, the same mapping unresolved), and the literal values masked in it."""
    spelling = spelling if isinstance(spelling, Mapping) else env
    out: dict[str, Any] = {}
    masked = []
    for name, value in env.items():
        raw = spelling.get(name, value)
        if spelled(raw) or value in (None, ""):
            out[name] = raw
        else:
            out[name] = REDACTED
            masked.append(f"{name}={value}")
    return out, masked


def secret_values(env: Any, args: Any) -> Iterator[str]:
    """Every value of ``env`` and every argument value after a flag in ``args`` (resolved:
    the strings the server is given), for the free-text redactor."""
    if isinstance(env, Mapping):
        yield from (str(v) for v in env.values() if v not in (None, ""))
    if isinstance(args, Sequence) and not isinstance(args, str):
        yield from (value for _, _, value in flag_values(args))


def fingerprint(values: Sequence[str]) -> str:
    """A fingerprint of ``values`` together (12 hex digits of PBKDF2-HMAC-SHA256, salted,
    20,000 rounds): equal for equal values, and too slow to search for a value by."""
    data = json.dumps(list(values), ensure_ascii=False).encode()
    return "pbkdf2:" + hashlib.pbkdf2_hmac("sha256", data, _SALT, _ROUNDS, dklen=6).hex()


def command_label(command: Any, args: Sequence[Any]) -> str:
    """A stdio server's command line for messages: the command and its arguments with every
    value after a flag masked (:func:`mask_args`)."""
    shown, _ = mask_args(list(args))
    return " ".join(str(a) for a in [command, *shown])
