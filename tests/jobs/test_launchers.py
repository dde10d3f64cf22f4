"""Sweeps on Hydra's real launchers (joblib, submitit_local, a local Ray), the sweep table,
and run folders claimed atomically. Every memrun process is the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import memrun_exe, run_after_a_killed_one, run_memrun

LAUNCHERS = {
    "basic": [],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "submitit_local": ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"],
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
            "+hydra.launcher.ray.init.include_dashboard=false"],
}
SWEEP = ["arm=bm25,bm25_nostop", "benchmark.limit=0,12", "progress=false"]  # limit=0 is a config error


def _sweep(tmp_path: Path, launcher: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    done = run_memrun(["-m", *LAUNCHERS[launcher], *SWEEP], tmp_path, timeout=600)
    (sweep_dir,) = (tmp_path / "outputs" / "multirun").iterdir()
    return done, sweep_dir


def _rows(sweep_dir: Path) -> list[dict]:
    done = run_memrun(["sweep", str(sweep_dir), "--format", "json"], sweep_dir)
    assert done.returncode == 2, done.stderr  # a job failed
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def basic_sweep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("basic")
    done, sweep_dir = _sweep(tmp, "basic")
    assert done.returncode == 2, done.stderr
    return sweep_dir


@pytest.mark.parametrize("launcher", ["basic", "joblib", "submitit_local", "ray"])
def test_a_sweep_with_a_failing_job_exits_2_with_one_table(tmp_path, launcher, basic_sweep):
    done, sweep_dir = _sweep(tmp_path, launcher) if launcher != "basic" else (None, basic_sweep)
    if done is not None:
        assert done.returncode == 2, done.stderr[-3000:]
        # submitit keeps a job's own stderr in its log folder: the table carries the error
        assert "Traceback" not in done.stderr
        table = done.stdout[done.stdout.index("sweep outputs/multirun"):]
        assert len(re.findall(r"complete\s+0\s", table)) == 2 and len(re.findall(r"failed\s+2\s", table)) == 2
        assert table.count("(failed): benchmark.limit=0") == 2
    rows = _rows(sweep_dir)
    assert [r["job"] for r in rows] == [0, 1, 2, 3]
    assert [r["status"] for r in rows] == ["failed", "complete", "failed", "complete"]
    assert [r["exit_code"] for r in rows] == [2, 0, 2, 0]
    # the same rows and summary numbers as the basic launcher (times and ids aside)
    for mine, basic in zip(rows, _rows(basic_sweep)):
        assert (mine["headline"], mine["value"], mine["n_items"]) == (basic["headline"], basic["value"], basic["n_items"])
        if mine["status"] != "complete":
            continue
        a = pq.read_table(Path(mine["run_dir"]) / "items.parquet").drop_columns(["run_id", "search_latency_ms"])
        b = pq.read_table(Path(basic["run_dir"]) / "items.parquet").drop_columns(["run_id", "search_latency_ms"])
        assert a.replace_schema_metadata(None).equals(b.replace_schema_metadata(None))


def test_sweep_command_formats_and_combined_table(basic_sweep, tmp_path):
    md = run_memrun(["sweep", str(basic_sweep), "--format", "markdown"], tmp_path)
    assert md.returncode == 2 and md.stdout.startswith("| job | overrides | status |")
    csv = run_memrun(["sweep", str(basic_sweep), "--format", "csv", "--out", str(tmp_path / "all.parquet")], tmp_path)
    assert csv.stdout.splitlines()[0].startswith("job,overrides,status,exit_code")
    combined = pq.read_table(tmp_path / "all.parquet")
    assert combined.num_rows == 24  # two complete jobs of 12 items
    assert set(combined.column("instrument_arm").to_pylist()) == {"bm25", "bm25_nostop"}
    assert len(set(combined.column("run_id").to_pylist())) == 2
    missing = run_memrun(["sweep", str(tmp_path / "nope")], tmp_path)
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_two_processes_racing_for_one_run_folder(tmp_path):
    """Exactly one runs; the other exits 2 in one line and leaves the winner's files as they were."""
    folder = tmp_path / "run"
    procs = [subprocess.Popen([*memrun_exe(), f"hydra.run.dir={folder}", f"seed={seed}", "progress=false"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in (1, 2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], outs
    loser = codes.index(2)
    assert "memrun: error:" in outs[loser][1] and outs[loser][1].count("\n") == 1
    winner_seed = (1, 2)[codes.index(0)]
    assert (folder / ".hydra" / "overrides.yaml").read_text().count(f"seed={winner_seed}") == 1
    assert pq.read_table(folder / "items.parquet").num_rows == 30
    assert not (folder / ".memrun-claim").exists()
    again = run_memrun([f"hydra.run.dir={folder}", "seed=3", "progress=false"], tmp_path)
    assert again.returncode == 2 and "already holds a run" in again.stderr
    assert "seed=3" not in (folder / ".hydra" / "overrides.yaml").read_text()


def test_a_new_run_names_an_earlier_unfinished_run_of_its_configuration(tmp_path):
    """A run killed with -9 leaves items.parts/ and no items.parquet; the next run of the same
    configuration resumes it and says so in one line (folder, rows); with resume=false it
    names it and starts over; another configuration says nothing."""
    again = run_after_a_killed_one(tmp_path)
    line = [ln for ln in again.stderr.splitlines() if "did not finish" in ln]
    assert len(line) == 1 and str(tmp_path / "runs" / "killed") in line[0] and "its 30 rows are kept" in line[0]
    assert (tmp_path / "runs" / "killed" / "resumed.json").is_file()  # taken over: not resumed a second time
    (tmp_path / "runs" / "killed" / "resumed.json").unlink()
    fresh = run_memrun(["progress=false", "resume=false", f"hydra.run.dir={tmp_path / 'runs' / 'fresh'}"], tmp_path)
    line = [ln for ln in fresh.stderr.splitlines() if "did not finish" in ln]
    assert fresh.returncode == 0 and len(line) == 1 and "holds 30 rows (resume=false: not resumed)" in line[0], fresh.stderr
    other = run_memrun(["progress=false", "arm=bm25_nostop", f"hydra.run.dir={tmp_path / 'runs' / 'other'}"], tmp_path)
    assert other.returncode == 0 and "did not finish" not in other.stderr


def test_an_unfinished_run_seen_through_a_link_too_is_resumed_and_not_also_called_stale(tmp_path):
    """A link beside the runs folder (pytest's ``<name>current``, a user's ``latest``) leads to the
    killed run a second time: it is resumed, and no line calls it stale under its other name."""
    (tmp_path / "latest").symlink_to("runs")
    again = run_after_a_killed_one(tmp_path)
    lines = [ln for ln in again.stderr.splitlines() if "did not finish" in ln]
    assert len(lines) == 1 and "its 30 rows are kept" in lines[0] and "latest" not in lines[0], again.stderr


def test_a_run_still_going_is_not_taken_for_unfinished(tmp_path):
    """A folder with parts and no table whose claim a live process holds is a run still going:
    a new run of the same configuration neither resumes it nor calls it stale. Once its
    process is gone (kill -9 leaves the claim) the next run resumes it, silently takes the
    dead claim over and releases it."""
    import socket

    runs = tmp_path / "runs"
    first = run_memrun(["progress=false", f"hydra.run.dir={runs / 'done'}"], tmp_path)
    assert first.returncode == 0, first.stderr
    going = runs / "going"
    (going / "items.parts").mkdir(parents=True)
    shutil.copy(runs / "done" / "items.parquet", going / "items.parts" / "part-00000.parquet")
    claim = going / ".memrun-claim"
    claim.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": "now"}))
    beside = run_memrun(["progress=false", f"hydra.run.dir={runs / 'beside'}"], tmp_path)
    assert beside.returncode == 0 and "did not finish" not in beside.stderr, beside.stderr
    assert not (going / "resumed.json").exists() and json.loads(claim.read_text())["pid"] == os.getpid()
    claim.write_text(json.dumps({"pid": 2**22 + 12345, "host": socket.gethostname(), "since": "earlier"}))
    after = run_memrun(["progress=false", f"hydra.run.dir={runs / 'after'}"], tmp_path)
    assert after.returncode == 0 and "its 30 rows are kept" in after.stderr, after.stderr
    assert "no longer running" not in after.stderr  # the killed run's own claim: not news
    assert (going / "resumed.json").is_file() and not claim.exists()


def test_an_unfinished_run_whose_metadata_fails_its_seal_is_not_taken_at_its_word(tmp_path):
    """A part of another configuration whose instrument was edited (or damaged) to claim this
    run's configuration, its checksum left as written: memrun names no earlier run."""
    from memrun.core.instrument import METADATA_KEY

    runs = tmp_path / "runs"
    for name, arm in (("done", "bm25"), ("other", "bm25_nostop")):
        made = run_memrun(["progress=false", f"arm={arm}", f"hydra.run.dir={runs / name}"], tmp_path)
        assert made.returncode == 0, made.stderr
    table = pq.read_table(runs / "other" / "items.parquet")
    meta = dict(table.schema.metadata)
    theirs = json.loads(meta[METADATA_KEY])
    ours = json.loads(pq.read_schema(runs / "done" / "items.parquet").metadata[METADATA_KEY])
    theirs.update(arm=ours["arm"], config=ours["config"])
    meta[METADATA_KEY] = json.dumps(theirs).encode()
    killed = runs / "killed" / "items.parts"
    killed.mkdir(parents=True)
    pq.write_table(table.replace_schema_metadata(meta), killed / "part-00000.parquet")
    again = run_memrun(["progress=false", f"hydra.run.dir={runs / 'again'}"], tmp_path)
    assert again.returncode == 0 and "did not finish" not in again.stderr, again.stderr


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path):
    done = run_memrun(["progress=false", "hydra.run.dir='/proc/memrun-cannot-write-here?token=sekrit-0451'"], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("memrun: error: cannot create the output folder")
    # the folder it names is shown as memrun shows any URL-like value: its query's values masked
    assert "sekrit-0451" not in done.stderr and "/proc/memrun-cannot-write-here?token=***" in done.stderr


def test_a_worker_that_dies_ends_the_sweep_with_its_table_and_exit_2(tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH", "")])}
    done = run_memrun(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "progress=false",
                       "arm._target_=memrun.arms.bm25.BM25Arm,arms.faulty.DyingArm"], tmp_path, env, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("memrun: error: the launcher failed: ") and "Traceback" not in done.stderr
    assert "sweep outputs/multirun" in done.stdout


def test_sweep_out_is_a_new_parquet_file_outside_the_runs(basic_sweep, tmp_path):
    run_dir = next(p for p in basic_sweep.iterdir() if (p / "items.parquet").exists())
    before = (run_dir / "items.parquet").read_bytes()
    for out, needle in ((run_dir / "items.parquet", "exists"), (tmp_path / "x.csv", "ending in .parquet"),
                        (tmp_path, "is a folder"), (run_dir / "new.parquet", "into a run folder")):
        done = run_memrun(["sweep", str(basic_sweep), "--out", str(out)], tmp_path)
        assert done.returncode == 2 and needle in done.stderr.strip().splitlines()[-1], (out, done.stderr)
    assert (run_dir / "items.parquet").read_bytes() == before


def test_a_moved_sweep_lists_each_job_once_from_its_new_place(basic_sweep, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(basic_sweep, moved)
    rows = json.loads(run_memrun(["sweep", str(moved), "--format", "json"], tmp_path).stdout)
    assert [r["job"] for r in rows] == [0, 1, 2, 3]
    assert all(r["run_dir"].startswith(str(moved)) for r in rows if r["status"] == "complete")


def test_a_claim_left_by_a_dead_process_is_taken_over(tmp_path):
    import socket

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / ".memrun-claim").write_text(json.dumps({"pid": 2**22 + 12345, "host": socket.gethostname(),
                                                       "since": "earlier"}))
    done = run_memrun([f"hydra.run.dir={folder}", "progress=false"], tmp_path)
    assert done.returncode == 0 and "no longer running; claiming the folder" in done.stderr
    assert pq.read_table(folder / "items.parquet").num_rows == 30


def test_two_sweeps_given_one_sweep_folder(tmp_path):
    """At once or one after the other, the second is refused in one line before any job runs;
    the first's jobs and table are whole."""
    folder = tmp_path / "one"
    args = ["-m", "arm=bm25,bm25_nostop", "progress=false", f"hydra.sweep.dir={folder}"]
    procs = [subprocess.Popen([*memrun_exe(), *args, f"seed={s}"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in (1, 2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert sorted(p.returncode for p in procs) == [0, 2], outs
    loser = [o for p, o in zip(procs, outs) if p.returncode == 2][0]
    last = loser[1].strip().splitlines()[-1]
    assert "is claimed by another run" in last or "already holds a sweep's jobs" in last
    rows = json.loads(run_memrun(["sweep", str(folder), "--format", "json"], tmp_path).stdout)
    assert [r["status"] for r in rows] == ["complete", "complete"]


def test_sweep_baseline_reads_the_jobs_as_one_family(basic_sweep, tmp_path):
    """--baseline JOB compares every other completed job with it: each arm's own gate, its
    one-sided p-value, Holm's adjustment over the family, and a winner only when both pass."""
    import json

    done = run_memrun(["sweep", str(basic_sweep), "--baseline", "1", "--format", "json"], tmp_path)
    text = done.stdout
    family = json.loads(text[text.index("{\n  \"baseline\""):])
    assert family["baseline"] == 1 and family["method"] == "holm" and family["alpha"] == 0.025
    assert [a["job"] for a in family["arms"]] == [0, 2, 3] and family["k"] == 1
    for failed in family["arms"][:2]:  # listed, with why and where, not left out
        assert failed["error"].startswith("the job failed (exit 2)\nbenchmark.limit=0: must be a positive integer")
        record = str(basic_sweep / ".memrun" / f"job-{failed['job']}.json")
        assert failed["error"].endswith(f"(recorded in {record})") and "winner" not in failed
    arm = family["arms"][2]
    assert arm["holm_p"] == pytest.approx(arm["p_pass"])  # a family of one: Holm changes nothing
    assert arm["winner"] == (arm["outcome"] == "pass" and arm["p_pass"] <= 0.025)
    plain = run_memrun(["sweep", str(basic_sweep), "--baseline", "1"], tmp_path)
    assert "Holm's step-down" in plain.stdout and "winner" in plain.stdout
    assert re.search(r"(?m)^0 +arm=bm25 benchmark\.limit=0 .* not compared: the job failed \(exit 2\) +- ", plain.stdout)
    assert "\n0: not compared: the job failed (exit 2)\nbenchmark.limit=0: must be" in plain.stdout
    bad = run_memrun(["sweep", str(basic_sweep), "--baseline", "0"], tmp_path)
    assert bad.returncode == 2 and "--baseline 0: not a completed job" in bad.stderr


def test_sweep_takes_the_compare_flags_after_dash_dash_wherever_its_options_stand(basic_sweep, tmp_path):
    """'memrun sweep DIR --baseline 1 -- --metric mrr' (options after DIR, as in 'memrun compare
    A B --metric mrr') was 'unrecognized arguments: -- --metric mrr'; it reads as with DIR last."""
    first = run_memrun(["sweep", "--baseline", "1", "--format", "json", str(basic_sweep), "--", "--metric", "mrr"],
                       tmp_path)
    last = run_memrun(["sweep", str(basic_sweep), "--baseline", "1", "--format", "json", "--", "--metric", "mrr"],
                      tmp_path)
    assert "unrecognized" not in last.stderr and last.stdout == first.stdout, last.stderr
    assert (last.returncode, first.returncode) == (2, 2)  # the sweep's worst job (benchmark.limit=0) failed
    family = json.loads(last.stdout[last.stdout.index("{\n  \"baseline\""):])
    assert [a["job"] for a in family["arms"]] == [0, 2, 3]
