"""The run specification (memrun.spec): built once from the composed config with every
default applied, frozen, and the one input of the stages (docs/architecture.md)."""

from __future__ import annotations

import dataclasses

import pytest

from memrun.config.compose import compose
from memrun.config.spec import build_spec
from memrun.errors import ConfigError
from memrun.lazy import lazy
from memrun.spec import RunSpec, ShardSpec


def test_the_spec_carries_every_default_and_cannot_change():
    spec, nodes = build_spec(compose(["benchmark=synthetic", "arm=bm25", "shard.count=3", "shard.index=2"]))
    assert isinstance(spec, RunSpec) and spec.axis == "recall" and not spec.accuracy
    assert spec.ks == (1, 3, 5, 10) and spec.top_k == 10  # top_k follows max(ks) on recall
    assert spec.shard == ShardSpec(3, 2) and spec.repeats == 1 and spec.min_coverage == 0.95
    assert spec.flow.concurrency >= 1 and spec.label == "synthetic x bm25"
    assert spec.config["arm"]["name"] == "bm25"  # the resolved config, as plain dicts
    assert nodes.arm.name == "bm25"  # a plugin still gets its own node
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.top_k = 3  # type: ignore[misc]


def test_the_spec_refuses_what_a_run_would_refuse_before_any_work():
    with pytest.raises(ConfigError, match="shard.index=3"):
        build_spec(compose(["shard.count=2", "shard.index=3"]))
    with pytest.raises(ConfigError, match="repeats=2"):
        build_spec(compose(["repeats=2"]))


def test_a_recall_run_with_a_judge_says_it_is_unused():
    spec, _ = build_spec(compose(["judge=exact"]))
    assert any("judge=exact is not used" in w for w in spec.warnings)


def test_lazy_loads_at_the_first_attribute_and_forwards_settings():
    module = lazy("memrun.tests_never_such_module")
    assert "not loaded" in repr(module)
    with pytest.raises(ImportError):
        module.anything  # noqa: B018
    json = lazy("json")
    assert json.dumps([1]) == "[1]" and "(loaded)" in repr(json)
