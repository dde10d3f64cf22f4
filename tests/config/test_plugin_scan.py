"""memrun.config.plugin_scan: a single run of the command line leaves Hydra's launcher plugins
unscanned while the last scan's index holds, and whatever asks for them still finds them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

# A process of the console script's kind (compositions reused, the scan deferred), printing what it loaded.
_RUN = ("import sys, io, contextlib; from memrun.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out): rc = main(sys.argv[1:], reuse_compositions=True)\n"
        "print(out.getvalue())\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('hydra_plugins.') or m == 'importlib.metadata'))\n"
        "sys.exit(rc)")


def _memrun(tmp_path: Path, *args: str, pythonpath: Path | None = None) -> tuple[str, list[str]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "MEMRUN_DATA_DIR": str(tmp_path / "empty")}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _RUN, *args], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    text, _, loaded = done.stdout.rpartition("LOADED ")
    return text, eval(loaded)  # noqa: S307 (our own list of module names)


def test_a_reused_run_imports_no_launcher_plugin_and_writes_the_same_config(tmp_path):
    """The first run scans the plugins (and keeps the index), the next one leaves them unscanned
    (the launchers' modules, importlib.metadata: ~14 ms) and composes the same config."""
    first, loaded_first = _memrun(tmp_path, "progress=false", "hydra.run.dir=first")
    again, loaded_again = _memrun(tmp_path, "progress=false", "hydra.run.dir=again")
    assert "hydra_plugins.hydra_joblib_launcher.joblib_launcher" in loaded_first  # the full scan, once
    assert loaded_again == []
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        assert (tmp_path / "first/.hydra" / name).read_text().replace("first", "X") == \
            (tmp_path / "again/.hydra" / name).read_text().replace("again", "X"), name
    assert (tmp_path / "cache/memrun/plugins/index.json").is_file()


def test_a_launcher_named_on_the_command_line_is_scanned_and_composed(tmp_path):
    """--cfg hydra with hydra/launcher=joblib (a group the plugins store into) composes the joblib
    launcher's config under a deferred scan as under Hydra's; --info (not deferred) lists every plugin."""
    _memrun(tmp_path, "progress=false", "hydra.run.dir=first")  # the index
    shown, loaded = _memrun(tmp_path, "--cfg", "hydra", "hydra/launcher=joblib")
    assert "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher" in shown
    assert "hydra_plugins.hydra_joblib_launcher.joblib_launcher" in loaded
    info, _ = _memrun(tmp_path, "--info", "plugins")
    assert "RayLauncher" in info and "JoblibLauncher" in info


def test_a_users_plugin_added_after_the_index_is_found(tmp_path):
    """A user's own plugin package (hydra_plugins/<name> on PYTHONPATH) changes the files the
    index was kept for: the run scans in full again, and its launcher config composes; kept
    in the new index, a deferred run still finds it when the command line names its group."""
    _memrun(tmp_path, "progress=false", "hydra.run.dir=first")  # the index, without the user's plugin
    package = tmp_path / "site" / "hydra_plugins" / "memrun_test_launcher"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent("""
        from hydra.core.config_store import ConfigStore
        from hydra.plugins.launcher import Launcher

        class TestLauncher(Launcher):
            def setup(self, *, hydra_context, task_function, config): ...
            def launch(self, job_overrides, initial_job_idx): ...

        ConfigStore.instance().store(group="hydra/launcher", name="memrun_test",
                                     node={"_target_": "hydra_plugins.memrun_test_launcher.TestLauncher"})
    """))
    for _ in range(2):  # the full scan (a new file), then the deferred one with the new index
        shown, _ = _memrun(tmp_path, "--cfg", "hydra", "hydra/launcher=memrun_test", pythonpath=tmp_path / "site")
        assert "hydra_plugins.memrun_test_launcher.TestLauncher" in shown
    for run, scanned in (("again", True), ("third", False)):  # composed (another sys.path): scanned; reused: not
        _, loaded = _memrun(tmp_path, "progress=false", f"hydra.run.dir={run}", pythonpath=tmp_path / "site")
        assert ("hydra_plugins.memrun_test_launcher" in loaded) is scanned


def test_the_deferred_scan_completes_to_the_full_scan(tmp_path):
    """Plugins left for later, then scanned: the same plugin classes in the same order, the same
    ConfigStore names and resolvers as Hydra's own scan; the composition cache counts the pending
    names as stored meanwhile (its key is the full scan's)."""
    code = textwrap.dedent("""
        import sys
        from hydra.core.plugins import Plugins
        from omegaconf import OmegaConf
        from memrun.config import compose_cache, plugin_scan
        undo = plugin_scan.deferred_scan([], folder=__import__("pathlib").Path(sys.argv[1]))
        Plugins.instance()
        before = sorted(compose_cache._stored_names())
        pending = sorted(plugin_scan.pending_names())
        OmegaConf.has_resolver("ray_pkg_version")  # a resolver the plugins register: scans them
        print(repr((pending != [], plugin_scan.pending_names() == frozenset(), before,
                    sorted(compose_cache._stored_names()),
                    [f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover()])))
        undo()
    """)
    full = textwrap.dedent("""
        from hydra.core.plugins import Plugins
        from memrun.config import compose_cache
        plugins = Plugins.instance()
        print(repr((sorted(compose_cache._stored_names()), [f"{c.__module__}.{c.__name__}" for c in plugins.discover()])))
    """)
    run = [sys.executable, "-c", code, str(tmp_path)]
    subprocess.run(run, check=True, capture_output=True)  # keeps the index
    deferred = eval(subprocess.run(run, check=True, capture_output=True, text=True).stdout)  # noqa: S307
    hydras = eval(subprocess.run([sys.executable, "-c", full], check=True, capture_output=True, text=True).stdout)  # noqa: S307
    was_pending, done, names_before, names_after, classes = deferred
    assert was_pending and done
    assert names_before == names_after == hydras[0]
    assert classes == hydras[1]
