"""memrun.config.interpolations: each ${...} string parsed once, with the same values and errors."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf, grammar_parser
from omegaconf import _utils as omegaconf_utils
from omegaconf import base as omegaconf_base
from omegaconf.errors import GrammarParseError

from memrun.config.compose import compose
from memrun.config.interpolations import cached_parses


def _counted(monkeypatch):
    calls = []
    original = grammar_parser.parse

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(grammar_parser, "parse", counting)
    return calls


def test_a_string_is_parsed_once_and_resolves_as_before(monkeypatch):
    before = (omegaconf_utils.parse, omegaconf_base.parse)
    calls = _counted(monkeypatch)
    undo = cached_parses()
    try:
        cfg = OmegaConf.create({"a": 2, "b": "x-${a}-${oc.env:NO_SUCH_VAR_37S,d}", "c": "x-${a}-${oc.env:NO_SUCH_VAR_37S,d}"})
        assert (cfg.b, cfg.c, cfg.b) == ("x-2-d", "x-2-d", "x-2-d")
    finally:
        undo()
    assert calls.count("x-${a}-${oc.env:NO_SUCH_VAR_37S,d}") == 1
    assert (omegaconf_utils.parse, omegaconf_base.parse) == before  # undone


def test_a_string_that_does_not_parse_raises_every_time():
    undo = cached_parses()
    try:
        for _ in range(2):
            with pytest.raises(GrammarParseError):
                OmegaConf.create({"a": "${oc.env:A"})
    finally:
        undo()


def test_nested_calls_patch_once_and_a_compose_reads_the_same_config():
    undo = cached_parses()
    try:
        assert cached_parses()() is None  # the inner undo does nothing
        inside = OmegaConf.to_yaml(compose(["benchmark=synthetic"]))
    finally:
        undo()
    assert OmegaConf.to_yaml(compose(["benchmark=synthetic"])) == inside
