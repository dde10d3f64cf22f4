"""memrun.config.compose_cache: a reused composition is the composition Hydra makes, and
anything that could change it (a group choice, a config file, the time) is composed again."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import hydra
import pytest
from hydra._internal import config_loader_impl
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from omegaconf import DictConfig, ListConfig, OmegaConf

from memrun import cli
from memrun.config import compose_cache, faster_compose, register
from memrun.core.paths import conf_dir


def _dump(node: Any, path: str = "") -> list[tuple[Any, ...]]:
    """Every node of ``node``: its path, type, metadata (types, flags, key) and leaf value."""
    meta = node._metadata  # noqa: SLF001
    row = (path, type(node).__name__, meta.ref_type, meta.object_type, meta.optional, meta.key,
           dict(meta.flags or {}), getattr(meta, "element_type", None), getattr(meta, "key_type", None))
    if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():  # noqa: SLF001
        return [row] + [r for k in node.keys() for r in _dump(node._get_node(k), f"{path}.{k}")]  # noqa: SLF001
    if isinstance(node, ListConfig) and not node._is_missing() and not node._is_none():  # noqa: SLF001
        return [row] + [r for i in range(len(node)) for r in _dump(node._get_node(i), f"{path}[{i}]")]  # noqa: SLF001
    return [(*row, node._value())]  # noqa: SLF001  (an interpolation: its text, unresolved)


def _entries(folder: Path) -> list[Path]:
    """The compositions kept in ``folder`` (not the parsed override lines)."""
    return [p for p in folder.glob("*.pickle") if p.name != compose_cache.PARSED_FILE]


class _Composer:
    """Hydra composes memrun's config (``return_hydra_config``: the node a run saves as
    hydra.yaml) through :func:`compose_cache.reused_compositions` kept in ``folder``;
    ``made`` counts the compositions Hydra actually made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path, config_dir: Path | None = None) -> None:
        self.folder, self.config_dir, self.made = folder, config_dir or conf_dir(), 0
        original = ConfigLoaderImpl._compose_config_from_defaults_list

        def counted(loader: Any, defaults: Any, repo: Any) -> Any:
            self.made += 1
            return original(loader, defaults=defaults, repo=repo)

        monkeypatch.setattr(ConfigLoaderImpl, "_compose_config_from_defaults_list", counted)

    def __call__(self, overrides: list[str], *, cached: bool = True) -> DictConfig:
        register()
        undo_fast = faster_compose()
        undo = compose_cache.reused_compositions(self.folder) if cached else (lambda: None)
        try:
            with hydra.initialize_config_dir(str(self.config_dir), version_base=None):
                return hydra.compose("config", overrides=overrides, return_hydra_config=True)
        finally:
            undo()
            undo_fast()


@pytest.fixture
def composer(monkeypatch, tmp_path):
    return _Composer(monkeypatch, tmp_path / "cache")


@pytest.mark.parametrize(("first", "again"), [
    (["benchmark=locomo", "repeats=3", "hydra.run.dir=/x/a"],
     ["benchmark=locomo", "repeats=5", "hydra.run.dir=/x/b", "+extra.key=1", "arm.top_k=7"]),
    (["arm=okapi", "~judge2", "axis=accuracy"], ["arm=okapi", "~judge2", "axis=recall", "seed=3"]),
    ([], ["hydra.job.env_copy=[HOME]", "concurrency=2"]),
])
def test_a_reused_composition_is_the_composition(composer, first, again):
    composer(first)
    made = composer.made
    reused = composer(again)
    assert composer.made == made, "the second call composed again: nothing was reused"
    fresh = composer(again, cached=False)
    assert composer.made == made + 1
    assert _dump(reused) == _dump(fresh)
    assert OmegaConf.to_yaml(reused) == OmegaConf.to_yaml(fresh)


def test_each_group_choice_is_composed(composer):
    assert composer(["arm=bm25"]).arm.name == "bm25"
    made = composer.made
    assert composer(["arm=okapi"]).arm.name == "okapi"
    assert composer.made == made + 1
    assert composer(["arm=okapi", "repeats=2"]).arm.name == "okapi"
    assert composer.made == made + 1  # arm=okapi's composition, its value override applied


def _user_conf(folder: Path) -> Path:
    (folder / "thing").mkdir(parents=True)
    (folder / "config.yaml").write_text("defaults:\n  - thing: a\n  - optional extra: x\n  - _self_\ntop: 1\n")
    (folder / "thing" / "a.yaml").write_text("value: 1\n")
    return folder


def _touch_later(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a new mtime even on a coarse clock


def test_an_edited_or_added_config_file_is_composed_again(monkeypatch, tmp_path):
    compose = _Composer(monkeypatch, tmp_path / "cache", _user_conf(tmp_path / "conf"))
    assert compose([]).thing.value == 1
    assert compose([]).thing.value == 1 and compose.made == 1
    _touch_later(tmp_path / "conf" / "thing" / "a.yaml", "value: 2\n")
    assert compose([]).thing.value == 2 and compose.made == 2
    (tmp_path / "conf" / "extra").mkdir()
    (tmp_path / "conf" / "extra" / "x.yaml").write_text("added: true\n")  # the optional default now exists
    assert compose([]).extra.added is True and compose.made == 3


def test_a_composition_that_resolved_a_value_is_not_kept(composer, monkeypatch):
    # an environment variable (or a user's resolver) may change from one run to the next
    original = config_loader_impl.create_defaults_list

    def resolving(*a, **k):
        assert OmegaConf.create({"home": "${oc.env:HOME}"}).home
        return original(*a, **k)

    monkeypatch.setattr(config_loader_impl, "create_defaults_list", resolving)
    composer([])
    assert not _entries(composer.folder)
    composer([])
    assert composer.made == 2


def test_the_time_is_this_runs(composer):
    composer([])  # merging Hydra's default run.dir resolves ${now:%H-%M-%S}, cached in the composition
    time.sleep(1.1)
    before = time.time()  # the kept composition's time is over a second older than this
    cfg = composer(["hydra.run.dir=o/${now:%H-%M-%S}"])
    assert composer.made == 1
    value = cfg.hydra.run.dir
    after = time.time()
    # a time between the two, to the second (the resolver reads the clock itself: which second it
    # falls in on a loaded machine is not known, only that it lies in this window)
    seconds = {time.strftime("%H-%M-%S", time.localtime(t)) for t in range(int(before), int(after) + 1)}
    assert value in {f"o/{s}" for s in seconds}, (value, seconds)


def test_a_composition_that_warned_is_not_kept(composer, monkeypatch):
    original = config_loader_impl.create_defaults_list

    def warning(*a, **k):
        warnings.warn("a deprecated config", UserWarning, stacklevel=1)
        return original(*a, **k)

    monkeypatch.setattr(config_loader_impl, "create_defaults_list", warning)
    with pytest.warns(UserWarning, match="a deprecated config"):
        composer([])
    assert not _entries(composer.folder)


def test_only_a_private_entry_of_this_user_is_read(composer):
    composer([])
    [entry] = _entries(composer.folder)
    entry.chmod(0o666)
    composer([])
    assert composer.made == 2


def test_a_run_saves_the_same_files_with_a_reused_composition(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(tmp_path / "empty"))
    runs = {}
    for name, reuse in (("plain", False), ("kept", True), ("reused", True)):
        assert cli.main(["progress=false", "seed=3", f"hydra.run.dir=runs/{name}"], reuse_compositions=reuse) == 0
        runs[name] = {f: (tmp_path / "runs" / name / ".hydra" / f).read_text().replace(name, "NAME")
                      for f in ("config.yaml", "hydra.yaml", "overrides.yaml")}
    assert _entries(tmp_path / "xdg" / "memrun" / "compose")
    assert runs["plain"] == runs["kept"] == runs["reused"]


def test_only_the_first_composition_of_a_process_is_kept(tmp_path):
    # a warning Python showed once is not shown again in the process: a later composition's
    # silence does not mean a fresh process composing it would be silent
    register()
    undo_fast, undo = faster_compose(), compose_cache.reused_compositions(tmp_path)
    try:
        with hydra.initialize_config_dir(str(conf_dir()), version_base=None):
            hydra.compose("config", overrides=["arm=bm25"])
            hydra.compose("config", overrides=["arm=okapi"])
    finally:
        undo()
        undo_fast()
    assert len(_entries(tmp_path)) == 1


LINES = ["axis=accuracy", "benchmark.path=/tmp/x.json", "repeats=3", "~judge2", "+a.b=[1,2]", "c={x:1}",
         "arm=bm25,okapi", "d=choice(1,2)", "e=range(3)", "f=glob(*)", "g='a b'", "h=${x}", "arm@p=okapi"]


def test_an_override_line_parsed_before_is_read_not_parsed(tmp_path, monkeypatch):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydras = OverridesParser.create().parse_overrides(overrides=LINES)
    parsed: list[str] = []
    original = OverridesParser.parse_overrides
    monkeypatch.setattr(OverridesParser, "parse_overrides",
                        lambda self, overrides: parsed.extend(overrides) or original(self, overrides=overrides))
    assert compose_cache._parsed(tmp_path, LINES) == hydras
    assert parsed == LINES
    parsed.clear()
    again = compose_cache._parsed(tmp_path, [*LINES[3:], "new=1"])
    assert again == [*hydras[3:], *original(OverridesParser.create(), overrides=["new=1"])]
    assert parsed == ["new=1"]  # only the line not met before
    parsed.clear()
    stamp = tmp_path / "parser.py"  # stands for a file of Hydra's parser: changed, everything is parsed again
    stamp.write_text("1")
    monkeypatch.setattr(compose_cache, "_parser_files", lambda: [compose_cache._stat(str(stamp))])
    compose_cache._parsed(tmp_path, LINES[:2])
    _touch_later(stamp, "2")
    compose_cache._parsed(tmp_path, LINES[:2])
    assert parsed == LINES[:2] * 2


def test_no_secret_reaches_a_cache_file(monkeypatch, tmp_path):
    lines = ["arm.headers.Authorization=Bearer abc123", "arm.base_url='https://u:pw@h.example/v1?key=q1'",
             "reader.api_key=plain-value-9", "x.note=sk-abcdefghijklmnopqrstu", "arm.env.TOKEN=t0k3n", "repeats=3"]
    compose_cache._parsed(tmp_path, lines)
    text = (tmp_path / compose_cache.PARSED_FILE).read_bytes()
    assert b"repeats=3" in text
    for secret in (b"abc123", b"pw@", b"q1", b"plain-value-9", b"sk-abcdefghijklmnopqrstu", b"t0k3n"):
        assert secret not in text
    conf = _user_conf(tmp_path / "conf")
    (conf / "thing" / "a.yaml").write_text("value: 1\napi_key: literal-k3y-value\n")
    compose = _Composer(monkeypatch, tmp_path / "cache", conf)
    compose([])
    assert not _entries(tmp_path / "cache")
