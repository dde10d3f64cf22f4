"""examples/github/memrun-pr.sh run locally: two commits of a test repository, a fake provider
on the loopback server, no GitHub."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from accuracy.test_accuracy_run import gold_reader
from conftest import memrun_exe
from servers.openai_server import OpenAIServer

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "github" / "memrun-pr.sh"
ARM = """defaults:
  - /schema/arm/bm25@_here_
  - _self_
_target_: memrun.arms.bm25.BM25Arm
name: team
top_k: {top_k}
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str, str]:
    """A repository whose second commit changes its arm config (and a file outside conf/)."""
    repo = tmp_path / "repo"
    (repo / "conf" / "arm").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "conf" / "arm" / "team.yaml").write_text(ARM.format(top_k=10))
    (repo / "README.md").write_text("team\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "conf" / "arm" / "team.yaml").write_text(ARM.format(top_k=1))
    (repo / "README.md").write_text("team, fewer hits\n")
    git(repo, "commit", "-qam", "fewer hits")
    return repo, base, git(repo, "rev-parse", "HEAD")


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_the_pr_script_plans_runs_compares_and_writes_the_comments(repo, tmp_path):
    repo_dir, base, head = repo
    with OpenAIServer() as server:
        server.responder = gold_reader
        url = server.base_url
        env = {
            **os.environ, "BASE_SHA": base, "HEAD_SHA": head, "MEMRUN_PR_OUT": "out", "MEMRUN_PR_BENCHMARK": "synthetic",
            "MEMRUN": " ".join(memrun_exe()), "MEMRUN_PR_COMPARE_ARGS": "--allow-fake",
            "MEMRUN_PR_ARGS": (f"axis=accuracy judge=gpt41 reader.provider=fake reader.base_url={url} "
                               f"judge.provider=fake judge.base_url={url} cache_dir={tmp_path / 'cache'}"),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"), "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        }
        env.pop("OPENAI_API_KEY", None)
        done = subprocess.run(["bash", str(SCRIPT), "all"], cwd=repo_dir, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        calls = server.count()
    out = repo_dir / "out"
    assert (out / "jobs.txt").read_text() == "benchmark=synthetic arm=team\n"  # README.md is not a config

    plan = (out / "plan.md").read_text()
    assert plan.startswith("<!-- memrun-plan -->") and "### memrun plan: synthetic x team" in plan
    assert "calls needed 60 of 60 (0 cached)" in plan

    comment = (out / "comments" / "1.md").read_text()
    assert comment.startswith("<!-- memrun-compare: synthetic/team -->\n### memrun compare: **UNRESOLVED** (exit code 2)")
    assert "-arm.top_k: 10\n+arm.top_k: 1\n" in comment and str(repo_dir) not in comment
    assert (out / "exit_code").read_text().strip() == "2" and (out / "conclusion").read_text().strip() == "neutral"
    assert "conclusion=neutral" in (tmp_path / "github_output").read_text()
    assert comment in (tmp_path / "step_summary.md").read_text()

    # the baseline paid for every call; the change only for the items whose retrieval changed
    made = [json.loads((out / "runs" / f"{side}-1" / "summary.json").read_text())["calls"]["made"]
            for side in ("base", "head")]
    assert made[0] == 60 and 0 < made[1] < 60 and calls == sum(made)

    # without --allow-fake, compare refuses the fake runs: exit 3 -> failure, still a sticky comment
    env["MEMRUN_PR_COMPARE_ARGS"] = ""
    done = subprocess.run(["bash", str(SCRIPT), "compare"], cwd=repo_dir, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert (out / "exit_code").read_text().strip() == "3" and (out / "conclusion").read_text().strip() == "failure"
    assert (out / "comments" / "1.md").read_text().startswith(
        "<!-- memrun-compare: synthetic/team -->\n### memrun compare: **REFUSED** (exit code 3)")


def test_the_workflow_triggers_on_conf_and_runs_the_script_steps():
    import yaml

    workflow = yaml.safe_load((SCRIPT.parent / "memrun-pr.yml").read_text())
    assert workflow[True]["pull_request"]["paths"] == ["conf/**"]  # YAML 1.1 reads the key `on` as true
    steps = workflow["jobs"]["memrun"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    for step in ("jobs", "plan", "run", "compare"):
        assert f'bash "$MEMRUN_PR_SCRIPT" {step}' in runs
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/cache@") for u in uses) and any(u.startswith("actions/github-script@") for u in uses)
    assert "conclusion == 'failure'" in steps[-1]["if"]
