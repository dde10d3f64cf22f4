"""The methods ``dataclasses`` writes for each class, compiled once per machine instead of at every start.

``@dataclass`` writes the source of each class's ``__init__``, ``__repr__``, ``__eq__`` (and a
frozen class's ``__setattr__``, ``__delattr__``, ``__hash__``) and compiles it with ``exec``
when the class is made: ~400 compilations in a run's start-up (memrun's ~85 classes, Hydra's
~40, its plugins'), ~48 ms of a cached re-run and ~20 ms of ``memrun --help``, the work a
``.pyc`` spares for ordinary code. The source depends only on the class's fields and options,
and compiling the same source gives the same code object, so :func:`compiled_once` keeps each
source's code object in one ``marshal`` file (per Python build, under
:func:`memrun.core.paths.user_cache`) and hands ``exec`` the kept code for a source it
compiled before. Each code object is kept as its own marshalled bytes and loaded only when
its source comes up: loading the whole file's code objects at once took ~42 ms for 1,400
sources, more than compiling the ~400 a run needs (~36 ms); the bytes load in ~1.5 ms and a
run's 400 code objects in ~2 ms. The classes, their methods and their behaviour are the ones ``dataclasses``
makes (``tests/core/test_dataclass_code.py`` compares them).

The file is read only when this user owns it and nobody else may write it (it holds code);
a missing, unreadable or unwritable file means compiling as Python does.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrun.core.paths import user_cache

CACHE_DIR = ("code",)
"""Under :func:`memrun.core.paths.user_cache`: one file per Python build."""
MAX_SOURCES = 4000
"""Sources kept: a file past this many keeps only those the last process used."""
_compile = builtins.compile
_exec = builtins.exec


def cache_file(folder: Path | None = None) -> Path:
    """The file for this interpreter: its build (``sys.version``) and optimization level
    name it, since both shape a code object."""
    build = hashlib.sha256(f"{sys.version}|{sys.flags.optimize}".encode()).hexdigest()[:16]
    name = f"dataclasses-{sys.implementation.cache_tag}-{build}.marshal"
    return (folder if folder is not None else user_cache(*CACHE_DIR)) / name


def compiled_once(folder: Path | None = None) -> Callable[[], None]:
    """Until the returned undo is called, the sources ``dataclasses`` compiles are taken from
    (and new ones added to) :func:`cache_file` in ``folder`` (default ``user_cache("code")``);
    the undo saves what was new. Inside another such call, or when ``dataclasses`` compiles
    under a ``__future__`` feature (its code would then differ from what this module
    compiles), nothing is patched. Never raises for the cache's sake."""
    if "exec" in vars(dataclasses) or any(
            type(v).__name__ == "_Feature" for v in vars(dataclasses).values()):
        return lambda: None
    path = cache_file(folder)
    kept = _read(path)
    used: dict[str, bytes] = {}
    new: list[str] = []

    def exec_(source: Any, globals_: Any = None, locals_: Any = None) -> None:
        if type(source) is str:
            data = kept.get(source)
            code = _loaded(data) if data is not None else None
            if code is None or data is None:  # as exec compiles a string: '<string>', with dataclasses' own (no) future flags
                code = _compile(source, "<string>", "exec", dont_inherit=True)
                data = marshal.dumps(code)
                new.append(source)
            used[source] = data
            source = code
        _exec(source, globals_, locals_)

    dataclasses.exec = exec_  # type: ignore[attr-defined]  # shadows the builtin for that module only

    def undo() -> None:
        vars(dataclasses).pop("exec", None)
        if new:
            _write(path, used if len(kept) + len(new) > MAX_SOURCES else {**kept, **used})

    return undo


def _read(path: Path) -> dict[str, bytes]:
    """The kept code objects, marshalled, by source; empty when the file is missing,
    unreadable, not this user's or writable by others."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return {}
            codes = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {k: v for k, v in codes.items() if type(k) is str and type(v) is bytes}


def _loaded(data: bytes) -> Any:
    """The code object marshalled in ``data``, or None when it is damaged."""
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is type(_loaded.__code__) else None


def _write(path: Path, codes: dict[str, bytes]) -> None:
    """Save ``codes`` atomically (the folder private to this user); errors are ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            marshal.dump(codes, handle)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return
