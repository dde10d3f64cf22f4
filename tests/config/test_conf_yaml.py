"""memrun's conf/ files parsed by libyaml while composing (memrun.config.conf_yaml): the same
values as OmegaConf's pure-Python parse for every file memrun ships, the same error for a
file libyaml or OmegaConf refuses, and any other file parsed as before."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf
from omegaconf import _utils as omegaconf_utils

from memrun.config import conf_yaml
from memrun.config.compose import compose
from memrun.core.paths import conf_dir

CONF = conf_dir()
FILES = sorted(CONF.rglob("*.yaml"))


def _parsed(path, loader):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=loader)


@pytest.fixture
def fast_loads(monkeypatch):
    """The patch installed for memrun's conf/, counting the files it parsed with libyaml."""
    seen = []
    original = conf_yaml._ConfLoader.__init__

    def counting(self, stream, *args):
        seen.append(stream.name)
        original(self, stream, *args)

    monkeypatch.setattr(conf_yaml._ConfLoader, "__init__", counting)
    undo = conf_yaml.libyaml_for_conf(CONF)
    yield seen
    undo()


def test_every_shipped_file_parses_to_the_same_values_with_libyaml():
    assert len(FILES) > 30
    pure = omegaconf_utils.get_yaml_loader()
    fast = conf_yaml.libyaml_loader(pure)
    for path in FILES:  # repr tells 1 from 1.0, True and "1"; dict order counts too
        assert repr(_parsed(path, fast)) == repr(_parsed(path, pure)), path


def test_a_compose_parses_memruns_files_with_libyaml_and_gets_the_same_config(fast_loads, monkeypatch):
    overrides = ["benchmark=locomo", "arm=http", "arm.base_url=http://127.0.0.1:9", "axis=accuracy", "judge=gpt41"]
    fast = OmegaConf.to_yaml(compose(overrides))
    assert len(fast_loads) >= 6 and all(name.startswith(str(CONF)) for name in fast_loads)
    monkeypatch.setattr("memrun.config.libyaml_for_conf", lambda folder: lambda: None)
    assert OmegaConf.to_yaml(compose(overrides)) == fast


def test_compose_leaves_omegaconf_as_it_found_it():
    before = omegaconf_utils.get_yaml_loader
    compose(["arm=bm25"])
    assert omegaconf_utils.get_yaml_loader is before


@pytest.mark.parametrize("text", ["a: 1\nb: [1, 2\n", "a: 1\na: 2\n", "a:\n\t- b\n", "k: v\n  bad: indent\n"])
def test_a_file_that_does_not_parse_fails_as_it_did(tmp_path, text):
    path = tmp_path / "broken.yaml"
    path.write_text(text)

    def error():
        with pytest.raises(yaml.YAMLError) as caught:
            OmegaConf.load(path)
        return str(caught.value)

    before = error()
    undo = conf_yaml.libyaml_for_conf(tmp_path)
    try:
        assert error() == before
    finally:
        undo()


def test_a_file_outside_memruns_folder_takes_the_pure_parser(tmp_path, fast_loads):
    path = tmp_path / "mine.yaml"
    path.write_text("x: 1\n")
    assert OmegaConf.to_container(OmegaConf.load(path)) == {"x": 1}
    assert fast_loads == []
    OmegaConf.load(FILES[0])
    assert fast_loads == [str(FILES[0])]
