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
from git_repo import ARM, commit
from servers.openai_server import OpenAIServer

SCRIPT = Path(__file__).resolve().parent.parent.parent / "examples" / "github" / "memrun-pr.sh"
JUDGE = """defaults:
  - /schema/judge/llm@_here_
  - _self_
name: teamjudge
model: gpt-4.1
prompts: {{default: default, abstention: abstention, temporal: temporal}}
max_tokens: {max_tokens}
"""


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str, str]:
    """A repository whose second commit changes its arm and judge configs (and a file outside conf/)."""
    repo = tmp_path / "repo"
    base = commit(repo, {"conf/arm/team.yaml": ARM.format(top_k=10), "README.md": "team\n",
                         "conf/judge/teamjudge.yaml": JUDGE.format(max_tokens=256)}, "base")
    head = commit(repo, {"conf/arm/team.yaml": ARM.format(top_k=1), "README.md": "team, fewer hits\n",
                         "conf/judge/teamjudge.yaml": JUDGE.format(max_tokens=200)}, "fewer hits")
    return repo, base, head


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
                              timeout=1200)  # only against a hang: a dozen memrun processes on a loaded machine
        assert done.returncode == 0, done.stderr
        calls = server.count()
    out = repo_dir / "out"
    jobs = (out / "jobs.txt").read_text()  # README.md is not a config
    assert jobs == "benchmark=synthetic arm=team\nbenchmark=synthetic judge=teamjudge\n"

    plan = (out / "plan.md").read_text()
    assert plan.startswith("<!-- memrun-plan -->") and "### memrun plan: synthetic x team" in plan
    assert plan.count("calls needed 60 of 60 (0 cached)") == 2 and "### memrun plan: synthetic x bm25" in plan

    comment = (out / "comments" / "1.md").read_text()
    assert comment.startswith("<!-- memrun-compare: synthetic/team -->\n### memrun compare: **UNRESOLVED** (exit code 2)")
    assert "-arm.top_k: 10\n+arm.top_k: 1\n" in comment and str(repo_dir) not in comment
    # fake providers are said at the top, as the plan says them
    assert comment.splitlines()[3].startswith("> **FAKE PROVIDERS: A and B ran with fake or stub providers")
    # each run names the commit of the configs it composed: the baseline the base, the change the head
    from memrun.io.reader import read_instrument
    for n in (1, 2):
        assert read_instrument(out / "runs" / f"base-{n}").git_commit == base
        assert read_instrument(out / "runs" / f"head-{n}").git_commit == head
    assert f"commit {base[:12]}" in comment and f"commit {head[:12]}" in comment
    assert (out / "exit_code").read_text().strip() == "2" and (out / "conclusion").read_text().strip() == "neutral"
    assert "conclusion=neutral" in (tmp_path / "github_output").read_text()
    assert comment in (tmp_path / "step_summary.md").read_text()

    # the baseline paid for every call; the change only for the items whose retrieval changed
    made = {f"{side}-{n}": json.loads((out / "runs" / f"{side}-{n}" / "summary.json").read_text())["calls"]["made"]
            for side in ("base", "head") for n in (1, 2)}
    assert made["base-1"] == 60 and 0 < made["head-1"] < 60 and calls == sum(made.values())
    # the judge job: the readers' calls were cached by then; only the new judge's requests are sent
    assert made["head-2"] == 30
    judged = (out / "comments" / "2.md").read_text()
    assert judged.startswith("<!-- memrun-compare: synthetic/bm25 judge=teamjudge -->\n")
    assert "treatments: judge_model, judge_prompt_sha256" in judged and "+judge.max_tokens: 200" in judged

    # without --allow-fake, compare refuses the fake runs: exit 3 -> failure, still a sticky comment
    env["MEMRUN_PR_COMPARE_ARGS"] = ""
    done = subprocess.run(["bash", str(SCRIPT), "compare"], cwd=repo_dir, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert (out / "exit_code").read_text().strip() == "3" and (out / "conclusion").read_text().strip() == "failure"
    assert (out / "comments" / "2.md").read_text().startswith("<!-- memrun-compare: synthetic/bm25 judge=teamjudge -->")
    assert (out / "comments" / "1.md").read_text().startswith(
        "<!-- memrun-compare: synthetic/team -->\n### memrun compare: **REFUSED** (exit code 3)")
    assert "> **FAKE PROVIDERS: A and B" in (out / "comments" / "1.md").read_text()


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


def test_the_workflow_runs_the_base_commits_scripts_and_gives_the_key_to_one_step():
    import yaml

    workflow = yaml.safe_load((SCRIPT.parent / "memrun-pr.yml").read_text())
    assert set(workflow[True]) == {"pull_request"}  # never pull_request_target: see docs/ci.md
    env, steps = workflow["env"], workflow["jobs"]["memrun"]["steps"]
    # the scripts come from a checkout of the base commit, not from the pull request's tree
    base = [s for s in steps if s.get("with", {}).get("ref") == "${{ github.event.pull_request.base.sha }}"]
    assert len(base) == 1 and base[0]["uses"].startswith("actions/checkout@")
    prefix = base[0]["with"]["path"] + "/"
    assert env["MEMRUN_PR_SCRIPT"].startswith(prefix) and env["MEMRUN_PR_STICKY"].startswith(prefix)
    scripts = " ".join(s.get("run", "") + s.get("with", {}).get("script", "") for s in steps)
    assert ".github/memrun" not in scripts.replace("$MEMRUN_PR_SCRIPT", "").replace("MEMRUN_PR_STICKY", "")
    # the provider key: in the run step's env only, and that step is skipped for forks
    text = yaml.safe_dump(workflow)
    holders = [s for s in steps if "secrets." in yaml.safe_dump(s)]
    assert text.count("secrets.") == 1 and len(holders) == 1 and holders[0]["run"] == 'bash "$MEMRUN_PR_SCRIPT" run'
    assert holders[0]["if"] == "env.SAME_REPO == 'true'"
    assert env["SAME_REPO"] == "${{ github.event.pull_request.head.repo.full_name == github.repository }}"
    for step in steps:  # no expression is pasted into a shell script: values reach it as environment
        assert "${{" not in step.get("run", ""), step["name"]


# A stand-in for memrun: prints what each subcommand's markdown starts with, runs nothing.
STUB = """import sys
if sys.argv[1:2] == ["compare"]:
    print("<!-- memrun-compare: synthetic/bm25 -->")
    print("### memrun compare: **PASS** (exit code 0)")
elif sys.argv[1:2] == ["plan"]:
    print("<!-- memrun-plan: synthetic/bm25 -->")
"""
HOSTILE = [
    "conf/judge/;touch${IFS}PWNED_SED|e;#.yaml",  # made sed run `touch PWNED_SED`
    "conf/arm/$(touch PWNED_SUB).yaml",
    "conf/arm/`touch PWNED_TICK`.yaml",
    "conf/arm/two words.yaml",
    "conf/judge/x\ntouch PWNED_NL.yaml",
    "conf/benchmark/-rf.yaml",
    "conf/arm/x'y\".yaml",
    "conf/arm/sub/$(touch PWNED_NESTED).yaml",
]


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_config_name_is_refused_in_one_line_and_never_run(tmp_path, name):
    repo = tmp_path / "repo"
    base = commit(repo, {"conf/arm/team.yaml": ARM.format(top_k=10)}, "base")
    head = commit(repo, {name: JUDGE.format(max_tokens=1)}, "hostile")
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    env = {**os.environ, "BASE_SHA": base, "HEAD_SHA": head, "MEMRUN_PR_OUT": "out",
           "MEMRUN_PR_BENCHMARK": "synthetic", "MEMRUN": f"python {stub}"}
    for var in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        env.pop(var, None)
    before = {p for p in tmp_path.rglob("*")}
    done = subprocess.run(["bash", str(SCRIPT), "all"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    created = {p for p in tmp_path.rglob("*")} - before
    assert not [p for p in created if "PWNED" in p.name], created
    assert done.returncode == 65, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memrun-pr: refused: ") and "rename the file" in lines[0], lines
    assert not (repo / "out" / "jobs.txt").exists() and not (repo / "out" / "comments").exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_jobs_file_the_script_did_not_write_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "jobs.txt").write_text("benchmark=synthetic judge=;touch${IFS}PWNED|e;#\n")
    env = {**os.environ, "BASE_SHA": "x", "HEAD_SHA": "y", "MEMRUN_PR_OUT": "out", "MEMRUN": "false"}
    for step in ("plan", "run", "compare"):
        done = subprocess.run(["bash", str(SCRIPT), step], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 65 and len(done.stderr.splitlines()) == 1, (step, done.stderr)
    assert not list(tmp_path.rglob("PWNED*"))
