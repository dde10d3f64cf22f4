"""memrun.stats exports its names lazily (PEP 562): each is the defining module's object,
and a caller of one module's names does not load the others."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import memrun.stats as stats


def test_every_exported_name_is_the_defining_modules_own():
    assert set(stats.__all__) == {*stats._EXPORTS, "agreement", "cohen_kappa"}
    importlib.import_module("memrun.stats.agreement")  # a submodule named like a function leaves the function
    assert stats.agreement is importlib.import_module("memrun.stats.agreement").agreement
    for name, module in stats._EXPORTS.items():
        assert getattr(stats, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import():
    with pytest.raises(AttributeError, match="'memrun.stats' has no attribute 'nosuch'"):
        stats.nosuch  # noqa: B018
    from memrun.stats import bootstrap  # a submodule, not an export

    assert bootstrap.__name__ == "memrun.stats.bootstrap"


def test_reading_the_labels_loads_no_other_statistics():
    code = ("import sys; from memrun.stats import majority_label, CORRECT; "
            "print(sorted(m for m in sys.modules if m.startswith('memrun.stats')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['memrun.stats', 'memrun.stats.agreement', 'memrun.stats.labels']"
