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
