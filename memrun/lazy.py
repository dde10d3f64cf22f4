"""The one way memrun defers an import, for start-up time.

Rule: every import sits at the top of its module; one a common path does not need (a heavy
library, or a module only one command or branch uses), or one a run loads on another thread
so that its first requests need not wait (pyarrow, on the writer's thread:
:mod:`memrun.io.writer`), is ``name = lazy("package.module")`` there, loaded at its first
attribute read; no function body imports (``tests/test_layers.py``).

Once loaded, the stand-in hands the module to the names bound to it in the module that
called :func:`lazy` (``np = lazy("numpy")`` becomes ``np = numpy``), so later reads are
plain module attribute reads: a read through the stand-in fails the normal lookup and
builds an AttributeError before ``__getattr__`` runs (~1 µs; a 2,000-question run read
``numpy.asarray`` and ``pyarrow.types`` through it ~7,000 times, ~3% of its instructions).

A type checker sees the real module: each binding sits in the ``else`` of an
``if TYPE_CHECKING:`` that imports it under the same name (``tests/test_layers.py``
checks it), so annotations such as ``pa.Table`` and calls through it are checked::

    if TYPE_CHECKING:
        import pyarrow as pa
    else:
        pa = lazy("pyarrow")
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands in for the module ``name`` until an attribute is read, then imports it.

    Reading or setting an attribute imports it; that raises what the import raises
    (ImportError for a missing module) or AttributeError for a missing name.
    """

    __slots__ = ("_lazy_name", "_lazy_module", "_lazy_globals")

    def __init__(self, name: str, globals_: dict[str, Any] | None = None) -> None:
        object.__setattr__(self, "_lazy_name", name)
        object.__setattr__(self, "_lazy_module", None)
        object.__setattr__(self, "_lazy_globals", globals_)  # the namespace that bound it (module docstring)

    def _load(self) -> ModuleType:
        module = self._lazy_module
        if module is None:
            module = importlib.import_module(self._lazy_name)
            object.__setattr__(self, "_lazy_module", module)
            if (names := self._lazy_globals) is not None:
                for key, value in list(names.items()):
                    if value is self:
                        names[key] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._load(), attr, value)  # a module-level setting (e.g. a test patching a lazily loaded module)

    def __repr__(self) -> str:
        state = "loaded" if self._lazy_module is not None else "not loaded"
        return f"<lazy module {self._lazy_name!r} ({state})>"


def lazy(name: str) -> Any:
    """A stand-in for ``import name``, imported at the first attribute read (``name``: dotted);
    the names the caller's module bound to it are then bound to the module itself."""
    return LazyModule(name, sys._getframe(1).f_globals)


def loaded(module: Any) -> ModuleType:
    """The real module behind ``module`` (a :func:`lazy` stand-in, imported now; a module as
    is), for code that must run right after the import or needs the module object itself."""
    return module._load() if isinstance(module, LazyModule) else module


def exports(names: Mapping[str, str], module_globals: dict[str, Any]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562) loading each name it exports at its first read.

    ``names``: exported name -> the module that defines it; ``module_globals``: the package's
    ``globals()``, where a loaded name is stored so later reads skip the function. A name
    not in ``names`` raises AttributeError, so ``from package import submodule`` still
    imports the submodule. Bind it at the package's top level:
    ``__getattr__ = exports(_EXPORTS, globals())``.
    """
    package = module_globals["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        module_globals[name] = value
        return value

    return __getattr__
