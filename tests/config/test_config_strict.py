"""Overrides OmegaConf accepts and memrun refuses (memrun.config.strict): a number or a word
for a boolean (OmegaConf alone reads ``5`` or ``yes`` into it), and a key added where a schema
has no such field; ``memrun plan`` composes the same way a run does."""

from __future__ import annotations

import re

import pytest
from omegaconf import OmegaConf

from memrun.config.compose import compose
from memrun.errors import ConfigError


@pytest.mark.parametrize("override", ["lexical_scores=2", "lexical_scores=yes", "arm.warmup=0", "stale_check='on'"])
def test_a_number_or_a_word_for_a_boolean_is_refused(override):
    with pytest.raises(ConfigError, match=f"^{override}: .* is true or false"):
        compose(["arm=http", override])


def test_config_groups_and_keys_added_to_free_form_nodes_are_left_to_hydra():
    cfg = compose(["arm=http", "arm/embedder=openai", "+arm.headers.X-Team=a",
                   "++arm.top_k=3", "+hydra.job.env_set.X=1"])
    assert "openai" in cfg.arm.embedder._target_.lower() and cfg.arm.headers["X-Team"] == "a"
    assert cfg.arm.top_k == 3
    assert compose(["arm=mcp", "+arm.env.TOKEN=b"]).arm.env.TOKEN == "b"


@pytest.mark.parametrize("override,message", [
    ("+repeat=3", "+repeat: the config has no key 'repeat' (memrun would not read it); did you mean 'repeats'?"),
    ("+reader.temprature=0.5", "+reader.temprature: reader has no key 'temprature' (memrun would not read it); "
                               "did you mean 'temperature'?"),
    ("+shard.cnt=2", "+shard.cnt: shard has no key 'cnt'"),
    ("++arm.top_kk=3", "++arm.top_kk: arm has no key 'top_kk'"),
    ("+reader.extra.x=1", "+reader.extra.x: reader has no key 'extra'"),
    ("+foo=1", "+foo: the config has no key 'foo' (memrun would not read it); valid keys: benchmark, arm,"),
])
def test_a_key_added_where_a_schema_has_no_such_field_is_refused(override, message):
    """Hydra adds it and memrun never reads it: a typo with a '+' ran as if not written."""
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        compose(["arm=http", override])


def test_a_key_added_beside_a_new_target_is_the_new_class_s():
    cfg = compose(["arm=bm25", "arm._target_=myteam.arms.KeywordArm", "+arm.min_overlap=2"])
    assert cfg.arm.min_overlap == 2


@pytest.mark.parametrize("override", ["lexical_scores=true", "arm.warmup=false", "arm.concurrency=5",
                                      "+arm.headers.flag=1", "arm.top_k=3"])
def test_booleans_written_as_booleans_and_other_fields_pass(override):
    key, _, value = override.lstrip("+").partition("=")
    cfg = compose(["arm=http", override])
    assert str(OmegaConf.select(cfg, key)).lower() == value


def test_the_schema_declares_the_default_error_share_every_reader_falls_back_to():
    """Readers of a run saved without max_error_share (merge, the run page, the summaries) take
    memrun.core.status.MAX_ERROR_SHARE; the schema spells it as a literal (--cfg job does not
    import memrun.core.status), so the two must agree."""
    import dataclasses

    from memrun.config import RunConfig
    from memrun.core.status import MAX_ERROR_SHARE

    default = next(f.default for f in dataclasses.fields(RunConfig) if f.name == "max_error_share")
    assert default == MAX_ERROR_SHARE


def test_only_an_override_that_may_name_a_boolean_is_parsed_again(monkeypatch):
    """Hydra parsed the overrides already; the check parses again only those whose key may be a
    boolean's (~0.3 ms an override with Hydra's parser), and refuses as before."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from memrun.config.strict import check_boolean_overrides

    cfg = compose(["arm=http", "lexical_scores=true"])
    seen = []
    original = OverridesParser.parse_overrides
    monkeypatch.setattr(OverridesParser, "parse_overrides", lambda self, lines: seen.append(list(lines))
                        or original(self, lines))
    given = ["arm=http", "arm.concurrency=5", "repeats=3", "hydra.run.dir=/tmp/x", "lexical_scores=true",
             "arm.warmup=false", "+arm.new_key=1", "arm/embedder=openai"]
    check_boolean_overrides(cfg, given)
    assert seen == [["lexical_scores=true", "arm.warmup=false", "arm/embedder=openai"]]
    with pytest.raises(ConfigError, match="^arm.warmup=0: arm.warmup is true or false"):
        check_boolean_overrides(cfg, ["repeats=3", "arm.warmup=0"])
    seen.clear()
    check_boolean_overrides(cfg, ["repeats=3", "concurrency=8"])
    assert seen == []
