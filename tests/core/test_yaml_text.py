"""memrun.core.yaml_text writes what OmegaConf's own dumper writes, libyaml or not."""

from __future__ import annotations

import random
import string

import pytest
import yaml
from omegaconf import OmegaConf
from omegaconf import _utils as omegaconf_utils

from memrun.config.compose import compose, resolved
from memrun.core import redaction
from memrun.core import yaml_text as module
from memrun.core.yaml_text import yaml_text

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CDumper"), reason="PyYAML without libyaml: one writer only")


def _pure(tree):
    return yaml.dump(tree, default_flow_style=False, allow_unicode=True, sort_keys=False,
                     Dumper=omegaconf_utils.get_omega_conf_dumper())


@pytest.mark.parametrize("overrides", [["arm=bm25"], ["arm=http", "benchmark=locomo"], ["arm=mcp", "benchmark=beam"],
                                       ["arm=dense", "axis=accuracy", "benchmark=longmemeval"],
                                       ["arm=hybrid", "axis=accuracy", "judge2=gpt4o"]])
def test_memruns_saved_configs_are_written_by_libyaml_as_omegaconf_writes_them(overrides):
    cfg = compose(overrides)
    job = redaction.redact_config(resolved(cfg, resolve=False, enum_to_str=True))
    assert module._same_under_libyaml(job)  # the fast path is the one a run takes
    assert yaml_text(job) == _pure(job) == OmegaConf.to_yaml(OmegaConf.create(job))


def test_trees_libyaml_would_write_otherwise_take_omegaconfs_dumper():
    for tree in ({"": 1}, {"k" * 129: 1}, {"help": "line one\nline two " * 3}, {"name": "café"}, {"k" * 40: "a\tb"},
                 {"path": __import__("pathlib").Path("x")}, {True: "a boolean key"}, {1.5: "a float key"}):
        assert not module._same_under_libyaml(tree)
        if not isinstance(tree.get("path"), __import__("pathlib").Path):
            assert yaml_text(tree) == _pure(tree)


_SPECIAL = ["null", "~", "true", "no", "off", "1", "1.5", "1e3", ".inf", ".nan", "0x1f", "1_000", "2024-01-01", "12:30",
            "", " ", "-", "- x", "? x", ": x", "a: b", "a #b", "#x", "@x", "`x", "!x", "&x", "*x", "|", ">", "'", '"', "%x",
            "[x]", "{x}", "x,y", "${a.b}", "${oc.env:A,b}", "a\\b", "  lead", "trail  ", "---", "...", "<<", "x:", "'${a}'"]


def _tree(rng: random.Random):
    def text(short: bool = False):
        if rng.random() < 0.3:
            value = rng.choice(_SPECIAL)
        elif not short and rng.random() < 0.2:  # escaped: short, as a session joiner
            value = "".join(rng.choice(" \n\t\r" + string.ascii_letters) for _ in range(rng.randint(0, 6)))
        elif rng.random() < 0.5:
            value = " ".join("".join(rng.choice(string.ascii_letters + "'\":#-") for _ in range(rng.randint(1, 10)))
                             for _ in range(rng.randint(1, 25)))
        else:
            value = "".join(rng.choice(string.printable[:95]) for _ in range(rng.randint(0, rng.choice([5, 90, 300]))))
        return (value[:100] or "k") if short else value

    def value(depth: int):
        r = rng.random()
        if depth < 4 and r < 0.25:
            return {(rng.randint(-5, 10**6) if rng.random() < 0.2 else text(short=True)): value(depth + 1)
                    for _ in range(rng.randint(0, 5))}
        if depth < 4 and r < 0.35:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        if r < 0.45:
            return rng.choice([None, True, False, 0, -3, 1.5, 1e300, float("inf"), float("nan"), 10**20, -0.0])
        return text()

    return {text(short=True): value(0) for _ in range(rng.randint(1, 6))}


def test_random_trees_of_the_kinds_libyaml_writes_come_out_the_same():
    rng = random.Random(37)
    for _ in range(3000):
        tree = _tree(rng)
        if module._same_under_libyaml(tree):  # nearly all: an escaped string deep under a long key is not
            assert yaml_text(tree) == _pure(tree), tree
