"""memrun.config.node_copies: a node's metadata deep-copied in one step is the copy ``copy`` makes."""

from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import Metadata

from memrun.config.compose import compose
from memrun.config.node_copies import metadata_copied_at_once


@dataclass
class _Typed:
    x: Optional[int] = None
    y: Dict[str, List[int]] = field(default_factory=dict)
    z: Any = 3


def _nodes(node: Any) -> list[Any]:
    out = [node]
    if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():  # noqa: SLF001
        for key in node.keys():
            out += _nodes(node._get_node(key))  # noqa: SLF001
    elif isinstance(node, ListConfig) and not node._is_missing() and not node._is_none():  # noqa: SLF001
        for i in range(len(node)):
            out += _nodes(node._get_node(i))  # noqa: SLF001
    return out


def _same_metadata(a: Metadata, b: Metadata, original: Metadata) -> None:
    assert type(a) is type(b) and a.__dict__.keys() == b.__dict__.keys()
    for name in a.__dict__:
        x, y, source = a.__dict__[name], b.__dict__[name], original.__dict__[name]
        assert type(x) is type(y) and x == y, name
        if isinstance(source, dict):
            assert x is not source and y is not source, name  # a copy, not the original
            assert getattr(x, "default_factory", None) is getattr(y, "default_factory", None)
        elif type(source) in (type(None), bool, int, float, str, type):
            assert x is source and y is source, name


def _both_copies(source: Any) -> tuple[Any, Any]:
    """``source`` deep-copied by copy's generic path, then with the metadata copied at once."""
    slow = copy.deepcopy(source)
    undo = metadata_copied_at_once()
    try:
        return slow, copy.deepcopy(source)
    finally:
        undo()


def test_every_node_of_a_composed_config_copies_as_copy_copies_it() -> None:
    cfg = compose(["benchmark=locomo", "arm=http", "arm.base_url=http://127.0.0.1:9", "axis=accuracy", "judge=gpt41"])
    slow, fast = _both_copies(cfg)
    assert "__deepcopy__" not in Metadata.__dict__  # undone
    originals, slows, fasts = _nodes(cfg), _nodes(slow), _nodes(fast)
    assert len(originals) == len(slows) == len(fasts) > 100
    for original, a, b in zip(originals, slows, fasts):
        assert type(a) is type(b)
        _same_metadata(a._metadata, b._metadata, original._metadata)  # noqa: SLF001
    assert OmegaConf.to_yaml(fast) == OmegaConf.to_yaml(slow) == OmegaConf.to_yaml(cfg)


def test_typed_fields_flags_and_a_shared_cache_copy_alike() -> None:
    cfg = OmegaConf.create({"a": 1, "b": [1, 2], "c": {"d": "x"}})
    OmegaConf.set_readonly(cfg.c, True)
    typed = OmegaConf.structured(_Typed)
    shared: defaultdict[str, Any] = defaultdict(dict, {"k": "v"})
    cfg._get_node("a")._metadata.resolver_cache = shared  # noqa: SLF001
    cfg._get_node("b")._metadata.resolver_cache = shared  # noqa: SLF001
    for source in (cfg, typed):
        slow, fast = _both_copies(source)
        for original, a, b in zip(_nodes(source), _nodes(slow), _nodes(fast)):
            _same_metadata(a._metadata, b._metadata, original._metadata)  # noqa: SLF001
    slow, fast = copy.deepcopy(cfg), None
    undo = metadata_copied_at_once()
    try:
        fast = copy.deepcopy(cfg)
        assert metadata_copied_at_once()() is None  # an inner call patches nothing
    finally:
        undo()
    for copied in (slow, fast):  # the cache two nodes shared is one cache in each copy
        first, second = copied._get_node("a")._metadata, copied._get_node("b")._metadata  # noqa: SLF001
        assert first.resolver_cache is second.resolver_cache is not shared


