"""memrun.lazy: a stand-in imports its module at the first read, then steps aside."""

from __future__ import annotations

import sys
import types

import pytest

from memrun.lazy import LazyModule, lazy, loaded


def _module_binding(name: str, target: str) -> types.ModuleType:
    """A fresh module whose top level runs ``name = lazy(target)``, as memrun's modules do."""
    module = types.ModuleType("memrun_lazy_probe")
    exec(f"from memrun.lazy import lazy\n{name} = lazy({target!r})\nalias = {name}\n", module.__dict__)
    return module


def test_the_first_read_imports_and_rebinds_the_callers_names_to_the_module():
    sys.modules.pop("colorsys", None)
    probe = _module_binding("cs", "colorsys")
    stand_in = probe.cs
    assert isinstance(stand_in, LazyModule) and "colorsys" not in sys.modules  # nothing imported yet
    assert probe.cs.rgb_to_hsv(1, 0, 0) == (0.0, 1.0, 1.0)
    assert probe.cs is sys.modules["colorsys"] and probe.alias is sys.modules["colorsys"]  # both names rebound
    assert stand_in.hls_to_rgb(0, 0, 0) == (0, 0, 0) and loaded(stand_in) is probe.cs  # a kept stand-in still works


def test_a_name_rebound_by_hand_is_left_alone_and_errors_are_the_imports():
    probe = _module_binding("cs", "colorsys")
    stand_in, probe.alias = probe.cs, "patched"
    stand_in.rgb_to_hsv(0, 0, 0)
    assert probe.alias == "patched"
    with pytest.raises(AttributeError):
        probe.cs.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        lazy("memrun_no_such_module").anything  # noqa: B018
