"""Build benchmarks and arms from their config nodes (Hydra ``_target_`` + ``instantiate``).

A built-in and a user's class are configured the same way; the keys memrun reads itself
(:data:`memrun.config.ARM_RESERVED_KEYS`, :data:`memrun.config.BENCHMARK_RESERVED_KEYS`)
are not passed to the constructor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from memrun.errors import ArmError, ConfigError, MemrunError


def locate_class(target: str) -> type:
    """The class at the dotted path ``target``: ``hydra.utils.get_class`` without the error it
    logs (on the run's stdout, before memrun's own one-line error says why). Raises what
    get_class raises: ImportError (inside InstantiationException) or ValueError (not a class)."""
    logger = logging.getLogger("hydra.utils")
    was = logger.disabled
    logger.disabled = True
    try:
        return get_class(target)
    finally:
        logger.disabled = was


def params(node: DictConfig, reserved: Sequence[str]) -> dict[str, Any]:
    """A plugin's config node resolved to plain values, minus the keys memrun reads itself."""
    tree = cast("dict[str, Any]", OmegaConf.to_container(node, resolve=True))  # a DictConfig's: a dict
    return {k: v for k, v in tree.items() if k not in reserved}


def build(node: DictConfig, reserved: Sequence[str], group: str) -> Any:
    """Instantiate a group's ``_target_`` with its keys minus the ones memrun reads."""
    if "_target_" not in node:
        raise ConfigError(f"{group}: no _target_ key; name the class that implements the {group}")
    # embedder: null is every arm's default (conf/arm/*.yaml): arms that do not embed take no such parameter
    params = {k: v for k, v in node.items() if k not in reserved and not (k == "embedder" and v is None)}
    try:  # _convert_ in the node, not as instantiate's keyword: a keyword is merged in, one more copy of the node
        return instantiate(OmegaConf.create({**params, "_convert_": "all"}))
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        kind = type(cause) if isinstance(cause, MemrunError) else ArmError  # keep DataError a DataError
        text = " ".join(str(cause).split())  # Hydra spreads one message over several lines
        if isinstance(cause, ImportError):
            text += f"; {group}._target_ must name a class whose package is importable (installed or on PYTHONPATH)"
        if isinstance(cause, MemrunError) and text.startswith(f"{group}."):
            raise kind(text) from exc  # it names its own key (arm.k1=...): that is the whole story
        raise kind(f"{group}: could not build {node['_target_']}: {text}") from exc
