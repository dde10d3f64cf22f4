"""Overrides OmegaConf accepts where memrun should not.

- A number or a word for a boolean: OmegaConf reads any integer and words such as
  ``yes``/``on`` into a ``bool`` field, so ``arm.warmup=5`` or ``lexical_scores=2`` ran as
  ``true`` without a word. A boolean given on the command line must be written ``true`` or
  ``false`` (:func:`check_boolean_overrides`).
- A key added (``+key=value``, ``++key=value``) inside a node memrun's schema types: Hydra
  adds it, and memrun never reads it, so ``+repeat=3`` or ``+reader.temprature=0.5`` ran as
  if not written. Free-form nodes (``arm.env``, ``arm.headers``, an untyped user config)
  take new keys as before (:func:`check_added_keys`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memrun.errors import ConfigError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import omegaconf
    from hydra.core.override_parser import overrides_parser
else:
    omegaconf = lazy("omegaconf")
    overrides_parser = lazy("hydra.core.override_parser.overrides_parser")


# An override whose text is a plain dotted key (after Hydra's "+", "++" or "~") then "=":
# that key is the one Hydra's parser reads (its key_or_group).
_PLAIN_KEY = re.compile(r"(?:\+\+|\+|~)?([A-Za-z_][A-Za-z0-9_.\-]*)=")
# An override that adds a key: "+key=" or "++key=" (a config group's "+group/option" has a "/").
_ADDED_KEY = re.compile(r"\+\+?([A-Za-z_][A-Za-z0-9_.\-]*)=")


def _may_set_a_boolean(cfg: Any, override: str) -> bool:
    """Whether ``override`` (as the job received it) may set a boolean field: False only for a
    plain ``key=...`` whose key names no boolean of ``cfg``, which needs no parse."""
    plain = _PLAIN_KEY.match(override)
    return plain is None or isinstance(_node(cfg, plain.group(1)), omegaconf.BooleanNode)


def _node(cfg: Any, key: str) -> Any:
    """The OmegaConf node at dotted ``key`` in ``cfg``, or None where there is none (a config
    group such as ``arm/embedder``, a key of Hydra's own config, a key the config lacks)."""
    if "/" in key or "@" in key:
        return None
    parent_key, _, last = key.rpartition(".")
    parent = omegaconf.OmegaConf.select(cfg, parent_key, default=None) if parent_key else cfg
    if not isinstance(parent, omegaconf.DictConfig) or last not in parent:
        return None
    return parent._get_node(last)  # noqa: SLF001 (OmegaConf's node API)


def check_boolean_overrides(cfg: Any, overrides: Iterable[str]) -> None:
    """Refuse an override (Hydra's ``key=value`` strings, as the job received them) that sets a
    boolean field of composed ``cfg`` to anything but ``true``, ``false`` or ``null``.

    Raises ConfigError naming the override and the fix (``arm.warmup=5: arm.warmup is true or
    false``). Other overrides, deletions and config-group choices are left to Hydra. Only an
    override that may name a boolean is parsed again (Hydra's parser: ~0.3 ms an override)."""
    suspects = [o for o in overrides if _may_set_a_boolean(cfg, o)]
    if not suspects:
        return
    parsed = overrides_parser.OverridesParser.create().parse_overrides(suspects)
    for override in parsed:
        if override.is_delete() or override.is_sweep_override():
            continue
        value = override.value()
        if value is None or isinstance(value, bool):
            continue
        node = _node(cfg, override.key_or_group)
        if isinstance(node, omegaconf.BooleanNode):
            raise ConfigError(f"{override.input_line}: {override.key_or_group} is true or false "
                              f"(OmegaConf would have read {value!r} as {bool(node._value())})")  # noqa: SLF001


def check_overrides(cfg: Any, overrides: Iterable[str]) -> None:
    """Both checks of this module on the overrides a config was composed with (Hydra's
    ``key=value`` strings). Raises ConfigError naming the override and the fix."""
    overrides = list(overrides)
    check_added_keys(cfg, overrides)
    check_boolean_overrides(cfg, overrides)


def check_added_keys(cfg: Any, overrides: Iterable[str]) -> None:
    """Refuse ``+key=value`` / ``++key=value`` whose key lies inside a node typed by one of
    memrun's schemas (a dataclass) that has no such field: memrun would never read it.

    Raises ConfigError: ``+reader.temprature: reader has no key 'temprature' (memrun
    would not read it); did you mean 'temperature'? ...`` (the key, never the value: it may
    be a credential). Keys under ``hydra`` are Hydra's,
    and a node whose ``_target_`` the same overrides replace takes the new class's keys:
    both are left alone."""
    overrides = list(overrides)
    for override in overrides:
        added = _ADDED_KEY.match(override)
        if added is None or added.group(1).split(".")[0] == "hydra":
            continue
        node: Any = cfg
        path: list[str] = []
        for part in added.group(1).split("."):
            if not isinstance(node, omegaconf.DictConfig):
                break
            schema = omegaconf.OmegaConf.get_type(node)
            where = ".".join(path)
            retargeted = any(o.lstrip("+").startswith(f"{where}._target_=") for o in overrides) if where else False
            if dataclasses.is_dataclass(schema) and not retargeted:
                fields = [f.name for f in dataclasses.fields(schema)]
                if part not in fields:
                    hint = difflib.get_close_matches(part, fields, n=1)
                    raise ConfigError(
                        f"{added.group(0)[:-1]}: {where or 'the config'} has no key '{part}' (memrun would not read it); "
                        + (f"did you mean '{hint[0]}'? " if hint else "")
                        + f"valid keys: {', '.join(f for f in fields if not f.startswith('_'))}")
            path.append(part)
            node = node._get_node(part) if part in node else None  # noqa: SLF001 (OmegaConf's node API)
