"""Declared hooks: what the run may call or read on a plugin (an arm, a benchmark, a judge).

Each extension point lists its hooks once, as :class:`Hook` values
(:data:`memrun.arms.contract.ARM_HOOKS`, :data:`memrun.judges.JUDGE_HOOKS`,
:data:`memrun.benchmarks.BENCHMARK_HOOKS`). :func:`check` holds a built plugin to that
list before any work, raising one error naming the missing or mistyped hook (or an
attribute whose name is one letter off a hook's, which the run would silently never
call); :func:`bind` is the run's only way to look a hook up: the declared name, the
plugin's bound method or value, or None when the plugin does not have it.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

METHOD, VALUE = "method", "value"
_MISSING = object()


@dataclass(frozen=True)
class Hook:
    """One hook of a contract.

    name: the attribute the run looks up. args: the positional arguments the run passes a
    method (their names, for the error). kwargs: keyword arguments it may pass too (the
    method must take the positional ones alone, or with these).
    required: the plugin must have it. kind: :data:`METHOD` (called) or :data:`VALUE`
    (read; ``types`` are the accepted types, None included when it may be unset).
    sync: the run calls it without awaiting, so it may not be ``async def``.
    """

    name: str
    args: tuple[str, ...] = ()
    kwargs: tuple[str, ...] = ()
    required: bool = False
    kind: str = METHOD
    types: tuple[type, ...] = ()
    sync: bool = False

    def spelled(self) -> str:
        """How the hook is written: ``search(self, query, k)`` or ``thread_safe``."""
        if self.kind == VALUE:
            return f"{self.name}: {' | '.join(t.__name__ for t in self.types)}"
        return f"{self.name}({', '.join(('self', *self.args, *(f'{k}=...' for k in self.kwargs)))})"


def bind(plugin: object, hooks: Iterable[Hook]) -> dict[str, Any]:
    """Hook name -> the plugin's bound method or value (None when it has none, or when a
    method hook is not callable: :func:`check` refused that at build time)."""
    out: dict[str, Any] = {}
    for hook in hooks:
        value = getattr(plugin, hook.name, None)
        out[hook.name] = value if hook.kind == VALUE or callable(value) else None
    return out


def check(plugin: object, hooks: Iterable[Hook], role: str, contract: str,
          error: Callable[[str], Exception], name: str | None = None) -> None:
    """Raise ``error(one line)`` when ``plugin`` breaks its contract: a required hook is
    missing; a method hook is not callable, cannot take the run's arguments, or is
    ``async def`` where the run does not await it; a value hook has another type; or a
    public attribute of the plugin's class is a near miss of an optional hook it lacks
    (``prepare_query`` for ``prepare_queries``). ``role``: the config group (``arm``,
    ``judge2``); ``contract``: where the contract is documented, for the error; ``name``:
    how the error names the plugin (its ``_target_``; default its class name)."""
    hooks = tuple(hooks)
    name = name or type(plugin).__name__
    for hook in hooks:
        problem = _problem(plugin, hook)
        if problem:
            raise error(f"{role}: {name}{problem}; the {role.rstrip('2')} contract is {contract}")
    near = _near_miss(plugin, hooks)
    if near:
        wrong, hook = near
        raise error(f"{role}: {name}.{wrong} is no hook memrun calls: did you mean {hook.spelled()}? "
                    f"(the {role.rstrip('2')} contract is {contract})")


def _problem(plugin: object, hook: Hook) -> str | None:
    """What is wrong with ``plugin``'s ``hook`` (the text after the class name), or None."""
    value = getattr(plugin, hook.name, _MISSING)
    if value is _MISSING or (value is None and hook.kind == METHOD):
        return f" has no {hook.name}() method: {hook.spelled()}" if hook.required else None
    if hook.kind == VALUE:
        if isinstance(value, hook.types):
            return None
        return f".{hook.name} is {type(value).__name__} {value!r:.40}; it must be {hook.spelled()}"
    if not callable(value):
        return f".{hook.name} is {type(value).__name__}, not a method: {hook.spelled()}"
    if hook.sync and inspect.iscoroutinefunction(value):
        return f".{hook.name} is async def, but memrun calls it without awaiting: make it a plain def"
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return None
    for kwargs in ({}, {k: None for k in hook.kwargs}):
        try:
            signature.bind(*hook.args, **kwargs)
            return None
        except TypeError:
            pass
    return f".{hook.name}{_params(signature)} cannot be called as {hook.spelled()}"


def _params(signature: inspect.Signature) -> str:
    stars: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return "(" + ", ".join(["self", *(stars.get(p.kind, "") + p.name for p in signature.parameters.values())]) + ")"


def _near_miss(plugin: object, hooks: tuple[Hook, ...]) -> tuple[str, Hook] | None:
    """(attribute, hook) for a public attribute of the plugin's class whose name is a near
    miss of an optional hook the plugin does not have, else None."""
    absent: Mapping[str, Hook] = {h.name: h for h in hooks
                                  if not h.required and getattr(plugin, h.name, None) is None}
    if not absent:
        return None
    known = {h.name for h in hooks}
    for attr in sorted(dir(type(plugin))):
        if attr.startswith("_") or attr in known:
            continue
        match = difflib.get_close_matches(attr, list(absent), n=1, cutoff=0.85)
        if match:
            return attr, absent[match[0]]
    return None
