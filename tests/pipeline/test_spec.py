"""The run specification (memrun.pipeline.spec): built once from the composed config with every
default applied, frozen, and the one input of the stages (docs/architecture.md)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from memrun.config.build_spec import build_spec
from memrun.config.compose import compose
from memrun.errors import ConfigError
from memrun.lazy import lazy
from memrun.pipeline.spec import AccuracySpec, ReaderSpec, RunSpec, ShardSpec


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


def test_the_accuracy_axis_reader_and_judges_are_in_the_spec_with_their_pins():
    spec, _ = build_spec(compose(["axis=accuracy", "benchmark=locomo", "judge=gpt41", "judge2=exact",
                                  "reader.model=gpt-4o", "concurrency=3", "judge2_sample=null"]))
    acc = spec.answering
    assert isinstance(acc, AccuracySpec) and isinstance(acc.reader, ReaderSpec)
    assert acc.reader.model == "gpt-4o" and acc.reader.prompt == "locomo"  # the prompt from locomo's pin
    assert acc.reader.warnings == ("reader.model=gpt-4o overrides locomo's pinned gpt-4.1-mini: "
                                   "accuracy does not compare with runs or papers that used the pin",)
    assert (acc.judge.role, acc.judge.name, acc.judge2.role, acc.judge2.name) == ("judge", "gpt41", "judge2", "exact")
    assert acc.calls.concurrency == 3 and acc.judge2_sample is None and acc.calls.http_attempts == 4
    assert acc.denominator == "accuracy_abstain_wrong" and acc.judge_warning is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        acc.reader.model = "other"  # type: ignore[misc]
    assert build_spec(compose(["benchmark=synthetic"]))[0].answering is None  # recall: no reader, no judge


@pytest.mark.parametrize(("override", "message"), [
    ("concurrency=0", "concurrency=0: must be at least 1"),
    ("http_attempts=0", "http_attempts=0: must be at least 1"),
    ("request_timeout_s=0", "request_timeout_s=0.0: must be a positive number of seconds"),
    ("judge2_sample=0", "judge2_sample=0: must be at least 1, or null for every item"),
    ("reader.overflow=drop", "reader.overflow=drop: choose one of truncate, skip"),
    ("reader.chars_per_token=0", "reader.chars_per_token must be positive"),
    ("judge=none", "axis=accuracy needs a judge; add judge=gpt41 (pinned for locomo)"),
    # every call would be refused alike (one error row per item), or clamped without a record of it
    ("reader.max_tokens=0", "reader.max_tokens=0: must be a positive integer"),
    ("reader.temperature=-1", "reader.temperature=-1.0: must be between 0 and 2"),
    ("judge.temperature=2.5", "judge.temperature=2.5: must be between 0 and 2"),
    ("judge.max_tokens=-5", "judge.max_tokens=-5: must be a positive integer"),
])
def test_the_accuracy_settings_are_checked_when_the_spec_is_built(override, message):
    # Refused by build_spec itself, before any plugin, reader or LLM client is built.
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_spec(compose(["axis=accuracy", "benchmark=locomo", "judge=gpt41", override]))


@pytest.mark.parametrize("override", ["concurrency=0", "concurrency=-5", "http_attempts=0", "request_timeout_s=0"])
def test_an_llm_setting_out_of_range_is_refused_on_the_recall_axis_too(override):
    # unused by a recall run, but never a value a run could use: accepted on one axis, refused on the other, it misled
    with pytest.raises(ConfigError, match=re.escape(override.partition("=")[0])):
        build_spec(compose(["benchmark=synthetic", override]))


def test_calibrate_judge_reads_its_llm_settings_through_the_same_checks(tmp_path):
    from memrun.commands.calibrate_judge import main

    with pytest.raises(ConfigError, match=re.escape("concurrency=0: must be at least 1")):
        main(["benchmark=synthetic", "judge=exact", "concurrency=0", "--n", "2", "--out", str(tmp_path / "c.json")])
    assert not (tmp_path / "c.json").exists()


def test_an_arm_that_answers_itself_has_no_reader_to_check(tmp_path):
    # benchmark=jsonl pins no reader: an error for a reader, nothing for an arm that answers itself.
    overrides = ["axis=accuracy", "benchmark=jsonl", f"benchmark.path={tmp_path / 'b.jsonl'}", "judge=exact"]
    spec, _ = build_spec(compose([*overrides, "arm=answers_file", f"arm.path={tmp_path / 'a.jsonl'}"]))
    assert spec.answering.reader is None
    with pytest.raises(ConfigError, match="benchmark jsonl pins no reader"):
        build_spec(compose(overrides))


def test_lazy_loads_at_the_first_attribute_and_forwards_settings():
    module = lazy("memrun.tests_never_such_module")
    assert "not loaded" in repr(module)
    with pytest.raises(ImportError):
        module.anything  # noqa: B018
    json = lazy("json")
    assert json.dumps([1]) == "[1]" and "(loaded)" in repr(json)
