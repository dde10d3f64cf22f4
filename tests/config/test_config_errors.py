"""Composition errors in one line with the fix (memrun.config.errors)."""

from __future__ import annotations

import pytest
from hydra.errors import MissingConfigException

from memrun.config.compose import compose
from memrun.config.errors import LAUNCHER_EXTRAS, explain_config_error
from memrun.errors import ConfigError


@pytest.mark.parametrize("launcher", sorted(LAUNCHER_EXTRAS))
def test_a_launcher_whose_plugin_is_missing_names_the_extra_to_install(launcher):
    # what Hydra raises in a venv holding only `pip install memrun` (no launcher plugin)
    exc = MissingConfigException(f"In 'hydra/config': Could not find 'hydra/launcher/{launcher}'\n",
                                 f"hydra/launcher/{launcher}", ["basic"])
    line = explain_config_error(exc)
    assert line == (f"in hydra/config.yaml: hydra/launcher={launcher}: no such config (its plugin is not installed: "
                    f"pip install 'memrun[{LAUNCHER_EXTRAS[launcher]}]', docs/scale.md); available: basic")


def test_an_unknown_launcher_is_told_apart_from_a_missing_plugin():
    with pytest.raises(ConfigError, match=r"hydra/launcher=nosuch: no such config; available: basic, joblib"):
        compose(["hydra/launcher=nosuch"])


def test_every_extra_named_exists():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(LAUNCHER_EXTRAS.values()) <= set(extras)
