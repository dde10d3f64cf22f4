"""The instrument names the commit of the repository whose configs were composed, with
memrun's own commit beside it (memrun.core.provenance)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_dirs, run_memrun
from git_repo import ARM, commit
from memrun.core.provenance import config_folder, git_commit
from memrun.io.reader import read_run


def test_the_config_folder_is_the_users_own_source_else_the_working_directory(tmp_path):
    sources = [{"path": "hydra.conf", "schema": "pkg", "provider": "hydra"},
               {"path": "/opt/memrun/conf", "schema": "file", "provider": "main"},
               {"path": "/team/conf", "schema": "file", "provider": "command-line"},
               {"path": "", "schema": "structured", "provider": "schema"}]
    assert config_folder(sources, tmp_path) == Path("/team/conf")
    searchpath = {"path": "/x/conf", "schema": "file", "provider": "hydra.searchpath in command-line"}
    assert config_folder([sources[1], searchpath], tmp_path) == Path("/x/conf")
    assert config_folder([sources[0], sources[1], sources[3]], tmp_path) == tmp_path


def test_each_run_names_the_commit_of_its_configs_and_memruns_own_beside_it(tmp_path):
    repo = tmp_path / "team"
    first = commit(repo, {"conf/arm/team.yaml": ARM.format(top_k=10)}, "one")
    elsewhere = tmp_path / "elsewhere"  # not a checkout: the commit comes from --config-dir's repository
    elsewhere.mkdir()
    env = {"MEMRUN_DATA_DIR": str(tmp_path / "empty")}
    done = run_memrun(["--config-dir", str(repo / "conf"), "arm=team", "progress=false",
                       f"hydra.run.dir={tmp_path / 'runs' / 'one'}"], elsewhere, env)
    assert done.returncode == 0, done.stderr
    second = commit(repo, {"conf/arm/team.yaml": ARM.format(top_k=1)}, "two")
    done = run_memrun(["--config-dir", "conf", "arm=team", "progress=false",
                       f"hydra.run.dir={tmp_path / 'runs' / 'two'}"], repo, env)
    assert done.returncode == 0, done.stderr
    done = run_memrun(["progress=false", f"hydra.run.dir={tmp_path / 'runs' / 'three'}"], repo, env)  # memrun's conf/
    assert done.returncode == 0, done.stderr
    labels = {folder.name: read_run(folder).instrument for folder in run_dirs(tmp_path / "runs")}
    assert labels["one"].git_commit == first and labels["two"].git_commit == second
    assert labels["three"].git_commit == second  # the working directory memrun ran in
    ours = git_commit()  # memrun's own checkout (None when installed as a package)
    assert {i.memrun_commit for i in labels.values()} == {ours} and ours not in (first, second)


def test_one_git_process_when_the_configs_are_in_memruns_own_checkout(monkeypatch, tmp_path):
    from memrun.core import provenance

    source = provenance._MEMRUN_SOURCE
    expected = git_commit(source)
    per_checkout = 1 if provenance.checkout_root(source) else 0  # an installed memrun: no process
    calls = []
    real = provenance.subprocess.run
    monkeypatch.setattr(provenance.subprocess, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    both = provenance.commits(source)
    assert both.configs == both.memrun == expected and len(calls) == per_checkout
    calls.clear()
    apart = provenance.commits(tmp_path)  # not a checkout: no process for it, one for memrun's
    assert apart.configs is None and apart.memrun == expected and len(calls) == per_checkout
