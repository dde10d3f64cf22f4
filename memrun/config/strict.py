"""Overrides OmegaConf accepts where memrun should not: a number or a word for a boolean.

OmegaConf reads any integer and words such as ``yes``/``on`` into a ``bool`` field, so
``arm.warmup=5`` or ``lexical_scores=2`` ran as ``true`` without a word. A boolean given on
the command line must be written ``true`` or ``false``.
"""

from __future__ import annotations

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
