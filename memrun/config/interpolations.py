"""OmegaConf's parse of an interpolation, made once per string while memrun composes and
resolves its config.

OmegaConf parses every string holding ``${`` with its ANTLR grammar each time it checks
one (a node is created or merged) or resolves one, in ANTLR's pure-Python runtime: a
compose of memrun's config parses 22 strings, most of them twice or more (Hydra's run and
sweep folder patterns and help texts, memrun's job folder), ~1 ms each once the grammar
is warm. A parse tree is only read once made (OmegaConf's visitor walks it; its tokens
keep their own input), so the tree of a string serves every later check and resolution
of the same string. A string that does not parse raises as it always did: nothing is
cached for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from omegaconf import _utils as omegaconf_utils
from omegaconf import base as omegaconf_base
from omegaconf import grammar_parser

# The modules that call ``parse`` by the name they imported (``from .grammar_parser import parse``).
_CALLERS = (omegaconf_utils, omegaconf_base)


def cached_parses(maxsize: int = 1024) -> Callable[[], None]:
    """Until the returned undo is called, OmegaConf parses each interpolation string once
    (up to ``maxsize`` strings remembered). Inside another such call nothing more is
    patched and the undo does nothing."""
    originals = [module.parse for module in _CALLERS]
    if any(getattr(parse, "memrun_cached", False) for parse in originals):
        return lambda: None
    cached = functools.lru_cache(maxsize=maxsize)(grammar_parser.parse)
    cached.memrun_cached = True  # type: ignore[attr-defined]
    for module in _CALLERS:
        module.parse = cached  # type: ignore[attr-defined]

    def undo() -> None:
        for module, parse in zip(_CALLERS, originals, strict=True):
            module.parse = parse  # type: ignore[attr-defined]

    return undo
