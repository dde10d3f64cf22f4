"""How memrun declares a config schema: :func:`schema`, the one decorator of every schema dataclass.

A schema is read, never built: ``OmegaConf.structured`` reads its fields, types and
defaults from the class (:mod:`memrun.config`), and calls it with no argument only where a
field's default is another schema (``default_factory=ShardConfig``), where the fields'
defaults are class attributes (a ``default_factory`` field's value is not one: the one shared
:func:`_fill_factories` sets those). No code compares, prints or constructs one with arguments,
so the generated ``__init__``, ``__repr__`` and ``__eq__`` are left out: each is compiled
from source at import, ~75% of the schema modules' import time (``memrun --help``,
``--cfg job`` and every run import all ~40 schemas).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(field_specifiers=(field,))
def schema(cls: type[T]) -> type[T]:
    """``cls`` as a dataclass without a generated ``__init__``, ``__repr__`` and ``__eq__`` (see the module)."""
    made: Any = dataclass(init=False, repr=False, eq=False)(cls)
    if any(f.default_factory is not MISSING for f in fields(made)):
        made.__init__ = _fill_factories
    return made


def _fill_factories(self: Any) -> None:
    """A bare schema instance's ``default_factory`` fields, each set to a fresh value of its factory."""
    for f in fields(self):
        if f.default_factory is not MISSING:
            setattr(self, f.name, f.default_factory())
