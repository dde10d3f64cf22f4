"""memrun.core.dataclass_code: a dataclass made from kept code is the class ``dataclasses`` makes."""

from __future__ import annotations

import dataclasses
import marshal
import os
from pathlib import Path
from typing import Any

import pytest

from memrun.core import dataclass_code

# Compiled without ``from __future__ import annotations`` (this module has it), as most of the
# classes a run makes are: __init__'s annotations are then the field types themselves.
SOURCE = '''
import dataclasses
import marshal
from typing import Optional

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: Optional[float] = 1.5
    tags: tuple = dataclasses.field(default_factory=tuple)

@dataclasses.dataclass(order=True)
class Named:
    name: str = "n"
'''


def _made(folder: Path) -> dict[str, Any]:
    undo = dataclass_code.compiled_once(folder)
    try:
        namespace: dict[str, Any] = {}
        exec(compile(SOURCE, "made", "exec", dont_inherit=True), namespace)  # noqa: S102 (the test's own classes)
        return namespace
    finally:
        undo()


def _methods(cls: type) -> dict[str, Any]:
    return {name: (f.__code__.co_code, f.__code__.co_consts, f.__code__.co_names, f.__annotations__, f.__defaults__)
            for name, f in vars(cls).items() if callable(f) and hasattr(f, "__code__")}


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sources: list[str] = []
    original = dataclass_code._compile
    monkeypatch.setattr(dataclass_code, "_compile", lambda s, *a, **k: sources.append(s) or original(s, *a, **k))
    return sources


def test_a_class_made_from_kept_code_is_the_class_dataclasses_makes(tmp_path, monkeypatch):
    plain: dict[str, Any] = {}
    exec(compile(SOURCE, "made", "exec", dont_inherit=True), plain)  # noqa: S102
    compiled = _compiles(monkeypatch)
    first = _made(tmp_path)
    assert compiled and dataclass_code.cache_file(tmp_path).is_file()
    compiled.clear()
    kept = _made(tmp_path)
    assert compiled == []  # every method from the file
    for ns in (first, kept):
        for name in ("Point", "Named"):
            assert _methods(ns[name]) == _methods(plain[name])
        assert ns["Point"].__init__.__annotations__["x"] is int  # not the string "_type_x"
        p = ns["Point"](2)
        assert (repr(p), p == ns["Point"](2), hash(p) == hash(ns["Point"](2)), p.tags) == (
            "Point(x=2, y=1.5, tags=())", True, True, ())
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3
        assert ns["Named"]("a") < ns["Named"]("b")
    assert "exec" not in vars(dataclasses)  # the undo restored the builtin


def test_a_file_another_user_could_write_is_not_read(tmp_path, monkeypatch):
    _made(tmp_path)
    os.chmod(dataclass_code.cache_file(tmp_path), 0o666)
    compiled = _compiles(monkeypatch)
    _made(tmp_path)
    assert compiled


def test_a_damaged_file_means_compiling(tmp_path, monkeypatch):
    path = dataclass_code.cache_file(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not marshal data")
    os.chmod(path, 0o600)
    compiled = _compiles(monkeypatch)
    assert _made(tmp_path)["Named"]().name == "n"
    assert compiled


def test_nothing_is_patched_inside_another_call(tmp_path):
    undo = dataclass_code.compiled_once(tmp_path)
    try:
        patched = vars(dataclasses)["exec"]
        dataclass_code.compiled_once(tmp_path / "other")()  # a no-op, and its undo leaves the first in place
        assert vars(dataclasses)["exec"] is patched
    finally:
        undo()


def test_a_damaged_entry_means_compiling_that_source_again(tmp_path, monkeypatch):
    _made(tmp_path)
    path = dataclass_code.cache_file(tmp_path)
    kept = marshal.loads(path.read_bytes())
    assert kept and all(type(v) is bytes for v in kept.values())  # each code object loaded only when used
    damaged = next(iter(kept))
    path.write_bytes(marshal.dumps({**kept, damaged: b"\x00damaged"}))
    compiled = _compiles(monkeypatch)
    assert _made(tmp_path)["Named"]().name == "n"
    assert compiled == [damaged]
    assert marshal.loads(path.read_bytes())[damaged] == kept[damaged]  # compiled again and kept again
