"""Start-up work of a run: one Hydra compose, no import the run does not use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from memrun import cli

CONF = Path(cli.conf_dir())


def test_memruns_configs_never_set_hydra_mode():
    # cli._skip_mode_compose relies on it: without a user's config, hydra.mode is unset.
    for path in CONF.rglob("*.yaml"):
        text = path.read_text()
        data = yaml.safe_load(text) or {}
        assert "mode" not in ((data.get("hydra") or {}) if isinstance(data, dict) else {}), path
        assert "hydra.mode" not in text, path


def _count_composes(monkeypatch, args, tmp_path):
    from hydra._internal.hydra import Hydra

    calls = []
    original = Hydra.compose_config

    def counting(self, *a, **k):
        calls.append(k.get("run_mode"))
        return original(self, *a, **k)

    monkeypatch.setattr(Hydra, "compose_config", counting)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(tmp_path / "empty"))
    code = cli.main(["progress=false", *args])
    return code, calls


def test_one_run_composes_the_config_once(monkeypatch, tmp_path):
    code, calls = _count_composes(monkeypatch, [], tmp_path)
    assert code == 0 and len(calls) == 1
    from hydra._internal.hydra import Hydra

    assert Hydra.get_mode.__qualname__ == "Hydra.get_mode"  # restored after the run


def test_a_mode_override_still_reaches_hydra(monkeypatch, tmp_path):
    # hydra.mode=MULTIRUN without -m: Hydra must compose to read it and run a sweep.
    code, calls = _count_composes(monkeypatch, ["hydra.mode=MULTIRUN", "arm=bm25,bm25_nostop"], tmp_path)
    assert code == 0
    assert len(list((tmp_path / "outputs" / "multirun").rglob("summary.json"))) == 2


def test_a_retrieval_run_does_not_import_httpx_the_openai_sdk_or_pandas(tmp_path):
    code = ("import sys; from memrun.cli import main; rc = main(['progress=false']); "
            "bad = [m for m in ('httpx', 'openai', 'click', 'pygments', 'pandas') if m in sys.modules]; "
            "print(bad); sys.exit(rc or bool(bad))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "MEMRUN_DATA_DIR": str(tmp_path / "empty")})
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_http_arms_run_loads_one_http_stack(memory, tmp_path):
    """arm=http sends every request, set-up and close included, through aiohttp: a run that
    meets no error never imports httpx (with httpcore, trio, and its command line's click and
    pygments: ~0.1 s before the first request)."""
    _, url = memory
    # When it fails, the run met an error (httpx's types are made only for one: memrun.arms.http_async),
    # retried or not: the stack of httpx's first import says which (on stderr, in the message).
    code = ("import sys, traceback; first = []\n"
            "class Spy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'httpx' and not first: first.append(''.join(traceback.format_stack()[:-1]))\n"
            "sys.meta_path.insert(0, Spy())\n"
            "from memrun.cli import main; rc = main(sys.argv[1:]); "
            "bad = [m for m in ('httpx', 'httpcore', 'trio', 'click', 'pygments') if m in sys.modules]; "
            "print(bad); print(*first, file=sys.stderr); sys.exit(rc or bool(bad))")
    done = subprocess.run([sys.executable, "-c", code, "progress=false", "arm=http", f"arm.base_url={url}",
                           f"arm.ledger_dir={tmp_path / 'ledger'}"], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "MEMRUN_DATA_DIR": str(tmp_path / "empty")})
    assert done.returncode == 0 and done.stdout.strip().endswith("[]"), done.stdout + done.stderr


def test_a_run_without_a_progress_bar_loads_rich_only_to_print_its_table(tmp_path):
    """rich (~0.03 s) is for the table a run prints at the end and a terminal's bar: with
    progress off or going to a log, nothing a run does before its items imports it."""
    code = ("import sys; import memrun.cli, memrun.jobs.launch, memrun.pipeline.run, memrun.pipeline.outer_stages, "
            "memrun.pipeline.item_stages, memrun.arms.http; from memrun.pipeline.item_stages import make_progress; "
            "[make_progress(None, on).__enter__() for on in (False, True)]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)  # stderr: a pipe, no terminal
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_run_flow_leaves_pyarrow_to_the_writers_thread():
    """A run's first requests go out while the writer's own thread imports pyarrow
    (memrun.io.writer): nothing the run flow imports before the items begin pulls it in."""
    code = ("import sys; import memrun.cli, memrun.jobs.launch, memrun.jobs.sweep, memrun.pipeline.run, memrun.pipeline.outer_stages, "
            "memrun.pipeline.item_stages, memrun.io.writer, memrun.arms.http; print('pyarrow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr


def test_an_http_arms_run_reaches_its_first_request_without_numpy_or_pyarrow():
    """What a run of arm=http imports before its first request (the command line, the job, the
    run flow, the arm and the stale-run check's footer read) pulls in neither numpy nor pyarrow:
    they load after it (the run-level metrics) or on the writer's thread."""
    code = ("import sys; import memrun.cli, memrun.jobs.launch, memrun.pipeline.run, memrun.pipeline.outer_stages, "
            "memrun.pipeline.item_stages, memrun.io.writer, memrun.io.reader, memrun.arms.http, memrun.benchmarks.locomo; "
            "print(sorted(m for m in ('numpy', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


# What `memrun --help` and `memrun --cfg job` load of memrun: the command line, the config
# schemas Hydra registers (and their decorator), the libyaml parse of conf/ (memrun.config.conf_yaml), each
# interpolation parsed once (memrun.config.interpolations), each node's metadata copied in one step
# (memrun.config.node_copies), the redaction its logging filter and the printed config use (with
# its rule for URLs, memrun.core.url_secrets: re and urllib.parse only), the config's YAML
# (memrun.core.yaml_text), the composition kept on disk (memrun.config.compose_cache) with the
# plugin scan it counts the names of (memrun.config.plugin_scan), the
# dataclasses' methods compiled once (memrun.core.dataclass_code), the checks a run applies to its
# overrides and values, which --cfg applies too (memrun.config.strict: stdlib and Hydra's parser only;
# memrun.config.values: stdlib only), and
# the launch module Hydra's app names, the reading of the line's flags before its overrides
# (memrun.commands.hydra_argv: Hydra's parser only when a flag follows an override); a job's own modules (http_policy: asyncio and ssl;
# the run flow; pyarrow, numpy, rich) load when a job runs; memrun.core.native_env (os only) sets
# numpy's and pyarrow's native settings before either loads.
STARTUP_MODULES = {
    "memrun", "memrun.cli", "memrun.commands", "memrun.commands.hydra_argv", "memrun.commands.show_config", "memrun.config",
    "memrun.config.arms", "memrun.config.benchmarks", "memrun.config.compose_cache", "memrun.config.conf_yaml", "memrun.config.plugin_scan", "memrun.config.interpolations",
    "memrun.config.llm", "memrun.config.node_copies", "memrun.config.schema", "memrun.config.strict",
    "memrun.config.values", "memrun.core", "memrun.core.dataclass_code", "memrun.core.masking", "memrun.core.native_env",
    "memrun.core.paths", "memrun.core.redaction", "memrun.core.signals", "memrun.core.url_secrets",
    "memrun.core.yaml_text", "memrun.errors", "memrun.jobs",
    "memrun.jobs.launch", "memrun.lazy", "memrun.metrics", "memrun.metrics.retrieval",
}


def test_help_and_cfg_load_only_the_start_up_modules(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for args in (["--help"], ["--cfg", "job"], ["--help"], ["--cfg", "job"]):  # composed, then reused
        code = ("import sys, io, contextlib; from memrun.cli import main\n"
                "with contextlib.redirect_stdout(io.StringIO()): rc = main(sys.argv[1:], reuse_compositions=True)\n"
                "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
                "('memrun', 'asyncio', 'ssl', 'numpy', 'rich', 'pyarrow', 'httpx'))))")
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        loaded = set(done.stdout.split())
        assert loaded <= STARTUP_MODULES, (args, sorted(loaded - STARTUP_MODULES))
