"""A deep copy of an OmegaConf node's metadata made in one step while memrun composes and runs.

Every OmegaConf node carries a ``Metadata`` (its types, key, flags and resolver cache), and
a deep copy of a config copies each node's through ``copy``'s generic path: ``__reduce_ex__``,
then a rebuild that deep-copies the state dict entry by entry, and the resolver cache, an
empty ``defaultdict``, the same way again: ~15 ``deepcopy`` calls per node. Hydra copies
memrun's config many times: a compose copies each config it loads and merges, and its
``run_job`` copies the composed config and its ``hydra`` node four times (``HydraConfig.set_config``
twice, the task's config, the job's Hydra config).

:func:`metadata_copied_at_once` gives ``Metadata`` a ``__deepcopy__`` that builds the same copy
directly: an instance of the same class, put in the memo first as ``copy`` does, holding the
very value ``copy`` would give for each field: the value itself for None, a bool, a number, a
string or a class (which ``copy`` returns as they are); for a dict or ``defaultdict`` of such
keys and values (the flags; the empty resolver cache, whose factory is ``dict``), a new one with
the same items (memoized and kept alive as ``copy`` does: two nodes sharing one share one in the
copy); ``copy.deepcopy`` of anything else (a typing construct such as ``Optional[int]``).
``tests/config/test_node_copies.py`` compares both copies field by field.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable
from types import FunctionType
from typing import Any

from omegaconf.base import Metadata

# What copy.deepcopy returns as it is (copy._deepcopy_atomic), of the kinds a node's metadata holds.
_ATOMIC = frozenset({type(None), bool, int, float, str, type})
_FACTORIES = frozenset({type(None), type, FunctionType})  # a defaultdict's factory that copy returns as it is


def _plain(value: Any) -> bool:
    """A dict or defaultdict whose keys and values ``copy`` returns as they are."""
    kind = type(value)
    if kind is defaultdict:
        if type(value.default_factory) not in _FACTORIES:
            return False
    elif kind is not dict:
        return False
    return all(type(k) in _ATOMIC and type(v) in _ATOMIC for k, v in value.items())


def _copy_metadata(self: Metadata, memo: dict[int, Any]) -> Metadata:
    """``copy.deepcopy(self, memo)`` as ``copy``'s generic path makes it (module docstring)."""
    copied = object.__new__(type(self))
    memo[id(self)] = copied
    state = copied.__dict__
    for name, value in self.__dict__.items():
        if type(value) in _ATOMIC:
            state[name] = value
        elif _plain(value):
            found = memo.get(id(value))
            if found is None:
                found = dict(value) if type(value) is dict else defaultdict(value.default_factory, value)
                memo[id(value)] = found
                memo.setdefault(id(memo), []).append(value)  # copy's _keep_alive
            state[name] = found
        else:
            state[name] = copy.deepcopy(value, memo)
    return copied


def metadata_copied_at_once() -> Callable[[], None]:
    """Until the returned undo is called, a deep copy of OmegaConf's ``Metadata`` (and so of every
    node) is made by :func:`_copy_metadata`. Inside another such call nothing more is patched."""
    if "__deepcopy__" in Metadata.__dict__:
        return lambda: None
    Metadata.__deepcopy__ = _copy_metadata  # type: ignore[attr-defined]

    def undo() -> None:
        del Metadata.__deepcopy__  # type: ignore[attr-defined]

    return undo
