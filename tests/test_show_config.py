"""``memrun --cfg job|hydra|all [--package P]`` and ``memrun --info config|all`` print the composed config with its secrets
redacted as the run's saved ``.hydra/`` files are (memrun.commands.show_config), and otherwise
exactly what Hydra prints."""

from __future__ import annotations

import logging

import pytest

from memrun.cli import main
from memrun.commands import show_config

PASSWORD, SESSION = "pw-Arm-7f3a9c2e", "sess-0c1d2e3f4a5b"
SECRETS = ["arm=http", f"arm.base_url=http://admin:{PASSWORD}@127.0.0.1:9", f"+arm.headers.X-Session={SESSION}",
           "+arm.headers.Accept=application/json", "arm.public_headers=[Accept]"]


def _printed(capsys, monkeypatch, tmp_path, args: list[str], raw: bool = False) -> str:
    """What ``memrun ARGS`` prints on stdout; ``raw``: as Hydra prints it, unredacted."""
    monkeypatch.chdir(tmp_path)
    # A run earlier in this process (pytest's worker) left Hydra's handlers on the root logger,
    # and their LogRedactor rewrites every record: --info's lines would come out redacted by it
    # whatever memrun does, so the raw print no longer shows what Hydra alone prints.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    if raw:
        monkeypatch.setattr(show_config, "redact_printed_config", lambda text, package=None: text)
        monkeypatch.setattr(show_config, "redact_printed_info", lambda text: text)
    capsys.readouterr()
    assert main(args) == 0
    monkeypatch.undo()
    return capsys.readouterr().out


@pytest.mark.parametrize("args", [["--cfg", "job"], ["--cfg", "hydra"], ["--cfg", "all"], ["--cf", "job", "-p", "arm"],
                                  ["--cfg", "job", "--package", "arm.headers"], ["--cfg", "job", "-p", "arm.headers.X-Session"],
                                  ["--cfg=job", "--package=arm.base_url"], ["--cfg", "all", "--resolve", "-p", "hydra.job"]])
def test_cfg_prints_no_secret(capsys, monkeypatch, tmp_path, args):
    raw = _printed(capsys, monkeypatch, tmp_path, [*args, *SECRETS], raw=True)
    assert SESSION in raw or PASSWORD in raw  # Hydra alone prints them
    out = _printed(capsys, monkeypatch, tmp_path, [*args, *SECRETS])
    assert PASSWORD not in out and SESSION not in out and "***" in out
    assert len(out.splitlines()) == len(raw.splitlines())  # the same shape, values replaced
    # A header marked public is kept, as in .hydra/, where the printed part shows arm.public_headers;
    # elsewhere (--cfg hydra, --package arm.headers) every header value is redacted.
    assert ("application/json" in out) is (args in (["--cfg", "job"], ["--cfg", "all"], ["--cf", "job", "-p", "arm"]))


@pytest.mark.parametrize("args", [["--cfg", "all"], ["--cfg", "job", "arm=http", "axis=accuracy", "judge=gpt41"],
                                  ["--cfg", "job", "-p", "benchmark"], ["--cfg", "job", "--resolve", "axis=accuracy"]])
def test_cfg_without_secrets_prints_what_hydra_prints(capsys, monkeypatch, tmp_path, args):
    assert _printed(capsys, monkeypatch, tmp_path, args) == _printed(capsys, monkeypatch, tmp_path, args, raw=True)


def test_text_that_does_not_parse_keeps_no_user_info():
    assert show_config.redact_printed_config("url: http://u:p@h\n  bad: [") == "url: http://***@h\n  bad: ["


@pytest.mark.parametrize("args", [["--info", "config"], ["--info", "all"], ["-i", "config"]])
def test_info_prints_no_secret(capsys, monkeypatch, tmp_path, args):
    raw = _printed(capsys, monkeypatch, tmp_path, [*args, *SECRETS], raw=True)
    assert SESSION in raw and PASSWORD in raw  # Hydra alone prints them, under "Config"
    out = _printed(capsys, monkeypatch, tmp_path, [*args, *SECRETS])
    assert PASSWORD not in out and SESSION not in out and "X-Session: '***'" in out
    assert len(out.splitlines()) == len(raw.splitlines())
    assert out.partition("\nConfig\n")[0] == raw.partition("\nConfig\n")[0]  # the other sections as Hydra prints them


@pytest.mark.parametrize("args", [["--info", "defaults"], ["--info", "searchpath"], ["--info", "config"]])
def test_info_without_secrets_prints_what_hydra_prints(capsys, monkeypatch, tmp_path, args):
    assert _printed(capsys, monkeypatch, tmp_path, args) == _printed(capsys, monkeypatch, tmp_path, args, raw=True)


def test_info_leaves_the_logging_of_the_process_as_it_found_it(capsys, monkeypatch, tmp_path):
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    _printed(capsys, monkeypatch, tmp_path, ["--info", "config"])
    assert (root.level, list(root.handlers)) == before  # Hydra's --info had left DEBUG and a stdout handler


@pytest.mark.parametrize("args", [["--cfg", "job"], ["--cfg", "all"], ["--cfg", "job", "--package", "arm"]])
def test_cfg_shows_the_embedder_the_run_records(capsys, monkeypatch, tmp_path, args):
    """An embedder composed into an arm that does not embed printed as composed (MiniLM)
    while the run records arm.embedder: null; now printed as the run records it, with the
    run's warning. An arm that embeds keeps its embedder."""
    import yaml

    def arm_of(out: str) -> dict:
        tree = yaml.safe_load(out.split("\n", 1)[1] if out.startswith("# @package") else out)
        return tree if "--package" in args else tree["arm"]

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    capsys.readouterr()
    assert main([*args, "arm=bm25", "arm/embedder=minilm"]) == 0
    monkeypatch.undo()
    printed = capsys.readouterr()
    assert arm_of(printed.out)["embedder"] is None
    assert printed.err == ("warning: arm=bm25 does not embed: arm/embedder=... is ignored here (it applies to dense "
                           "and hybrid); recorded as arm.embedder=null\n")
    out = _printed(capsys, monkeypatch, tmp_path, [*args, "arm=dense", "arm/embedder=minilm"])
    assert arm_of(out)["embedder"]["model"] == "all-MiniLM-L6-v2"


def test_the_source_reading_agrees_with_the_imported_classes():
    """--cfg reads what an arm does with an embedder from its source (no import); a run from
    the imported class: the two agree on every arm memrun ships."""
    from pathlib import Path

    from memrun.config.build_spec import embeds
    from memrun.config.embedder_use import declared_use

    targets = {line.split(":", 1)[1].strip() for path in Path("conf/arm").rglob("*.yaml")
               for line in path.read_text().splitlines() if line.startswith("_target_:")}
    import re
    source = Path("memrun/config/arms.py").read_text()
    targets |= set(re.findall(r'_target_: str = "(memrun\.arms\.[\w.]+Arm)"', source))
    assert len(targets) >= 9, targets
    for target in sorted(targets):
        assert declared_use(target) == embeds(target), target
    assert declared_use("memrun.arms.no_such.Arm") is None


@pytest.mark.parametrize("overrides", [["concurrency=0"], ["repeats=3"], ["min_coverage=2"], ["arm.top_k=0"],
                                       ["max_error_share=1.5"], ["ks=[0,5]"], ["request_timeout_s=0"],
                                       ["axis=accuracy", "judge=gpt41", "judge.temperature=5"]])
def test_cfg_refuses_a_value_a_run_refuses_with_the_runs_line(capsys, monkeypatch, tmp_path, overrides):
    """``memrun --cfg job concurrency=0`` printed the config and exited 0 while a run of the
    same overrides was refused: --cfg now applies the run's value checks (memrun.config.values)."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["benchmark=synthetic", "progress=false", f"hydra.run.dir={tmp_path / 'run'}", *overrides]) == 2
    run = capsys.readouterr()
    for mode in (["--cfg", "job"], ["--cfg", "all"]):
        assert main([*mode, "benchmark=synthetic", *overrides]) == 2
        shown = capsys.readouterr()
        assert shown.out == "" and shown.err.startswith("memrun: error: ") and shown.err == run.err, (shown, run.err)
