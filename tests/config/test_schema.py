"""memrun.config.schema: a schema without generated methods still reads as its declared defaults."""

from __future__ import annotations

from dataclasses import field
from typing import Dict, List

from omegaconf import OmegaConf

from memrun.config.schema import schema


@schema
class _Inner:
    k: int = 3
    names: List[str] = field(default_factory=lambda: ["a"])
    flags: Dict[str, bool] = field(default_factory=dict)


@schema
class _Outer:
    inner: _Inner = field(default_factory=_Inner)
    tags: List[str] = field(default_factory=list)


@schema
class _Child(_Inner):
    extra: int = 1


def test_a_nested_schema_with_factory_fields_composes_to_its_defaults() -> None:
    """A schema reached through default_factory has its own factory fields set, not missing."""
    cfg = OmegaConf.structured(_Outer)
    assert OmegaConf.to_container(cfg) == {"inner": {"k": 3, "names": ["a"], "flags": {}}, "tags": []}


def test_each_bare_instance_gets_fresh_factory_values() -> None:
    one, two = _Inner(), _Inner()
    one.names.append("b")
    assert two.names == ["a"] and one.names is not two.names


def test_inherited_factory_fields_are_filled() -> None:
    child = _Child()
    assert (child.names, child.flags, child.extra) == (["a"], {}, 1)


def test_schemas_without_factories_keep_no_init() -> None:
    """The saving the decorator exists for: no __init__ is compiled for a schema of plain defaults."""

    @schema
    class Plain:
        k: int = 1

    assert "__init__" not in vars(Plain)
