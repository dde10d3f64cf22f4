"""What makes memrun's compose cheaper gives the same config: a copy of the ConfigStore (every
compose makes one) shares the stored nodes, yet what a copy loads is a config of its own; Hydra's
version strings are parsed once while memrun composes (memrun.config.faster_compose)."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from memrun import config
from memrun.config.compose import compose


def _leaves(folder: dict) -> dict:
    out = {}
    for key, value in folder.items():
        if isinstance(value, dict):
            out.update({f"{key}/{k}": v for k, v in _leaves(value).items()})
        else:
            out[key] = value
    return out


def test_a_copy_of_the_store_shares_every_node_hydras_included() -> None:
    config.register()
    store = ConfigStore.instance()
    store.store(name="late_plugin_node", node={"a": 1}, group="memrun_test_group")  # stored after memrun's register
    try:
        copied = copy.deepcopy(store)
        mine, theirs = _leaves(store.repo), _leaves(copied.repo)
        assert mine.keys() == theirs.keys()
        assert "hydra/config.yaml" in mine and "memrun_test_group/late_plugin_node.yaml" in mine
        assert all(theirs[key] is node for key, node in mine.items())
        assert copied.repo["memrun_test_group"] is not store.repo["memrun_test_group"]  # the folders are copied
    finally:
        del store.repo["memrun_test_group"]


def test_what_a_copy_loads_is_a_config_of_its_own() -> None:
    config.register()
    copied = copy.deepcopy(ConfigStore.instance())
    first, second = copied.load("hydra/config.yaml").node, ConfigStore.instance().load("hydra/config.yaml").node
    first.job.name = "changed here only"
    assert OmegaConf.is_missing(second.job, "name")  # as stored: Hydra fills it per run
    assert OmegaConf.is_config(copied.load("schema/arm/bm25.yaml").node)  # a schema is built when loaded


def test_composes_the_same_config_twice() -> None:
    overrides = ["benchmark=locomo", "axis=accuracy", "judge=gpt41"]
    assert OmegaConf.to_yaml(compose(overrides)) == OmegaConf.to_yaml(compose(overrides))


def test_faster_compose_parses_each_hydra_version_string_once_and_undoes_it(monkeypatch) -> None:
    from hydra import version as hydra_version

    calls = []
    original = hydra_version._get_version
    monkeypatch.setattr(hydra_version, "_get_version", lambda ver: calls.append(ver) or original(ver))
    undo = config.faster_compose()
    try:
        expected = hydra_version.base_at_least("1.2")
        assert [hydra_version.base_at_least("1.2") for _ in range(50)] == [expected] * 50
        compose(["benchmark=locomo"])
        assert sorted(calls) == sorted(set(calls))  # each string parsed once
    finally:
        undo()
    assert hydra_version._get_version is not original and not getattr(hydra_version._get_version, "memrun_cached", False)


@dataclass
class _PluginSchema:
    x: int = 1
    nested: Dict[str, List[int]] = field(default_factory=lambda: {"a": [1]})


def test_a_plugins_schema_is_built_when_loaded_as_if_built_when_stored(monkeypatch) -> None:
    built = []
    structured = OmegaConf.structured
    monkeypatch.setattr(OmegaConf, "structured", lambda obj, *a, **k: built.append(obj) or structured(obj, *a, **k))
    undo = config.faster_compose()
    store = ConfigStore.instance()
    try:
        store.store(name="lazy", node=_PluginSchema, group="memrun_test_group/launcher", package="pkg", provider="p")
        store.store(name="eager", node=_PluginSchema(x=5), group="memrun_test_group/launcher")  # an instance: now
        assert built == [_PluginSchema(x=5)]
        loaded = store.load("memrun_test_group/launcher/lazy.yaml")
        assert built[1:] == [_PluginSchema]
        assert (loaded.name, loaded.group, loaded.package, loaded.provider) == ("lazy.yaml", "memrun_test_group/launcher",
                                                                                "pkg", "p")
        assert OmegaConf.to_yaml(loaded.node) == OmegaConf.to_yaml(structured(_PluginSchema))
        assert OmegaConf.get_type(loaded.node) is _PluginSchema
        assert store.load("memrun_test_group/launcher/eager.yaml").node.x == 5
    finally:
        undo()
        del store.repo["memrun_test_group"]
    assert not getattr(ConfigStore.store, "memrun_lazy", False)


def test_the_plugins_schemas_are_not_built_by_a_commands_start(tmp_path) -> None:
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    code = ("import io, contextlib; from memrun.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['--cfg', 'job'])\n"
            "from hydra.core.config_store import ConfigStore\n"
            "print(type(ConfigStore.instance().repo['hydra']['launcher']['ray_aws.yaml'].node).__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout.strip() == "_Schema", done.stdout + done.stderr
