"""The ``memrun`` console script end to end, in subprocesses, as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import memrun_exe, run_dirs, run_memrun
from memrun.cli import main as cli_main
from memrun.commands.hydra_argv import flags_first
from memrun.io.reader import read_run
from memrun.io.schema import items_schema

USER_PROJECT = Path(__file__).parent / "user_project"


def user_env(data_dir: Path | None = None) -> dict[str, str]:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(USER_PROJECT), os.environ.get("PYTHONPATH")]))}
    if data_dir:
        env["MEMRUN_DATA_DIR"] = str(data_dir)
    return env


def test_no_arguments_runs_the_offline_synthetic_default(tmp_path):
    done = run_memrun(["progress=false"], tmp_path, {"MEMRUN_DATA_DIR": str(tmp_path / "empty")})
    assert done.returncode == 0, done.stderr
    (folder,) = run_dirs(tmp_path / "outputs")
    run = read_run(folder)
    assert run.table.num_rows == 30 and run.instrument.benchmark == "synthetic"
    assert run.instrument.gold_match == "substring"
    assert "overall_all" in done.stdout and "recall" in done.stdout and "@1 " in done.stdout  # two-line headers


@pytest.mark.realdata
def test_locomo_bm25_end_to_end_twice(tmp_path, data_dir):
    tables = []
    for _ in range(2):
        done = run_memrun(["benchmark=locomo", "arm=bm25"], tmp_path, {"MEMRUN_DATA_DIR": str(data_dir)})
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    folders = run_dirs(tmp_path / "outputs")
    assert len(folders) == 2
    for folder in folders:
        run = read_run(folder)
        table = run.table
        assert run.complete and table.num_rows == 1986
        assert table.schema.remove_metadata().equals(items_schema([1, 3, 5, 10]))
        inst = run.instrument
        assert (inst.axis, inst.benchmark, inst.split, inst.arm, inst.search_mode) == ("recall", "locomo", "locomo10", "bm25", "lexical")
        assert inst.dataset_sha256 == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
        assert inst.status == "complete" and inst.n_rows == 1986 and inst.n_errors == 0
        assert inst.embedder is None and inst.reader_model is None and inst.judge_model is None
        assert inst.load_counts["evidence_split"] == 4 and inst.config["arm"]["top_k"] == 10
        assert inst.memrun_version and inst.started_at and inst.finished_at
        for col in ("hit_at_1", "hit_at_10", "rr", "ndcg_at_10"):
            values = [v for v in table.column(col).to_pylist() if v is not None]
            assert len(values) == 1982 and all(0 <= float(v) <= 1 for v in values)
        tables.append(table)
        summary = (folder / "summary.json").read_text()
        assert '"overall_comparable"' in summary and '"overall_all"' in summary
    for col in ("item_id", "retrieved_keys", "retrieved_scores", "rr", "hit_at_5", "ndcg_at_10"):
        assert tables[0].column(col).to_pylist() == tables[1].column(col).to_pylist()


@pytest.mark.realdata
def test_sweep_writes_one_folder_per_job(tmp_path, data_dir):
    done = run_memrun(["-m", "benchmark=locomo", "arm=bm25,bm25_nostop", "progress=false"], tmp_path,
                      {"MEMRUN_DATA_DIR": str(data_dir)})
    assert done.returncode == 0, done.stderr
    folders = run_dirs(tmp_path / "outputs" / "multirun")
    assert [f.name.split("_", 2)[-1] for f in folders] == ["bm25", "bm25_nostop"]
    a, b = (read_run(f) for f in folders)
    assert a.instrument.arm == "bm25" and b.instrument.arm == "bm25_nostop"
    assert a.table.column("retrieved_keys").to_pylist() != b.table.column("retrieved_keys").to_pylist()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["arm.top_kk=5"], "unknown config key 'arm.top_kk'; did you mean 'top_k'?"),
        (["benchmark=locomoo"], "benchmark=locomoo: no such config (did you mean benchmark=locomo?); available: beam, jsonl, locomo, longmemeval, synthetic"),
        (["arm.top_k=ten"], "arm.top_k=ten: arm.top_k is a whole number (an integer such as 5)"),
        (["concurrency=1.5"], "concurrency=1.5: concurrency is a whole number"),
        (["min_coverage=lots"], "min_coverage=lots: min_coverage is a number (such as 0.5)"),
        (["progress=maybe"], "progress=maybe: progress is true or false"),
        (["axis=accuracy"], "axis=accuracy needs a judge; add judge=gpt41"),
        (["axis=precision"], "axis: Invalid value 'precision', expected one of [recall, accuracy]"),
        (["arm.method=bm99"], "memrun: error: arm.method='bm99' is not a bm25s method"),
        (["ks=[0,5]"], "ks=[0, 5]: cut-offs must be positive integers"),
        (["arm=bm25", "arm.top_k"], "cannot parse the override"),
        (["hydra.run.dir=/tmp/a=b"], "cannot parse the override 'hydra.run.dir=/tmp/a=b': mismatched input '='"),
        (["benchmark.slice.category=2"], "int is not a ListConfig, list or tuple. Give a list: benchmark.slice.category=[...]"),
        # OmegaConf reads a number or a word into a boolean field; memrun wants true or false
        (["arm=http", "arm.warmup=5"], "arm.warmup=5: arm.warmup is true or false (OmegaConf would have read 5 as True)"),
        (["lexical_scores=off"], "lexical_scores=off: lexical_scores is true or false"),
        # judge=none's keys were offered as the valid ones ("valid keys: name, model")
        (["judge.temperature=0"], "unknown config key 'judge.temperature': judge=none is no judge, so it has no "
                                  "temperature; choose a judge first, e.g. judge=gpt41 judge.temperature=..."),
        # judge2=none with a model ran no second judge, exit 0
        (["axis=accuracy", "judge=exact", "judge2.model=gpt-4o"],
         "judge2.model=gpt-4o: judge2=none is no judge, so no answer would be re-graded; choose the second judge"),
    ],
)
def test_bad_config_is_one_line_not_a_traceback(tmp_path, args, needle):
    done = run_memrun([*args, "progress=false"], tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memrun: error: "), done.stderr
    assert needle in lines[0]
    assert not (tmp_path / "outputs").exists()  # no folder, and no empty parents


@pytest.mark.parametrize(
    "content,needle",
    [
        ("defaults:\n  - /schema/arm/bm25@_here_\n  - _self_\nname: bad\ntop_kk: 5\n",
         "in arm/bad.yaml: unknown config key 'arm.top_kk'; did you mean 'top_k'?"),
        ("name: bad\n  top_k: [1,\n", "bad.yaml: line 2, column 8: invalid YAML: mapping values are not allowed here"),
        ("defaults:\n  - /schema/arm/bm25@_here_\n  - _self_\nname: bad\ntop_k: many\n",
         "arm.top_k=many: arm.top_k is a whole number"),
    ],
)
def test_bad_config_file_names_the_file_and_key(tmp_path, content, needle):
    (tmp_path / "conf" / "arm").mkdir(parents=True)
    (tmp_path / "conf" / "arm" / "bad.yaml").write_text(content)
    done = run_memrun(["--config-dir", str(tmp_path / "conf"), "arm=bad"], tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert needle in line and line.startswith("memrun: error: ")


def test_missing_data_offline_is_one_line(tmp_path):
    url = "http://127.0.0.1:9/locomo10.json"
    done = run_memrun(["benchmark=locomo", f"benchmark.url={url}"], tmp_path, {"MEMRUN_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    for needle in ("locomo10.json", url, "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4", str(tmp_path / "data")):
        assert needle in line


def test_user_config_dir_and_target_arm(tmp_path):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword", "progress=false"], tmp_path, user_env())
    assert done.returncode == 0, done.stderr
    (folder,) = run_dirs(tmp_path / "outputs")
    run = read_run(folder)
    assert run.instrument.arm == "keyword" and run.instrument.search_mode == "lexical"
    assert run.table.num_rows == 30 and sum(run.table.column("hit_at_10").to_pylist()) > 10


def test_user_arm_with_unknown_parameter_or_target(tmp_path):
    conf = ["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword"]
    done = run_memrun([*conf, "+arm.min_overlapp=2"], tmp_path, user_env())
    assert done.returncode == 2 and "unexpected keyword argument 'min_overlapp'" in done.stderr
    done = run_memrun([*conf, "arm._target_=myteam.arms.Nope"], tmp_path, user_env())
    assert done.returncode == 2 and "could not build myteam.arms.Nope" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_user_arm_without_a_name_is_told_so_wherever_its_run_goes(tmp_path):
    """With hydra.run.dir set, the first read of arm.name was the unfinished-run search (once a
    run folder stood beside it), and the error was 'unknown config key arm.name'."""
    conf = tmp_path / "conf"
    (conf / "arm").mkdir(parents=True)
    (conf / "arm" / "nameless.yaml").write_text("_target_: myteam.arms.KeywordArm\ntop_k: 10\n")
    (tmp_path / "runs" / "earlier" / "items.parts").mkdir(parents=True)  # a run folder beside the new one
    done = run_memrun(["--config-dir", str(conf), "arm=nameless", "hydra.run.dir=runs/new"], tmp_path, user_env())
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "memrun: error: arm: its config has no name; add 'name: <a short name>' to the arm's config file "
        "(run folders, tables and memrun compare name the arm by it)"]
    assert not (tmp_path / "runs" / "new").exists()  # refused before its folder was claimed


def test_item_errors_are_counted_and_excluded(tmp_path):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword", "+arm.fail_on=invoice", "progress=false"],
                      tmp_path, user_env())
    assert done.returncode == 0, done.stderr
    run = read_run(run_dirs(tmp_path / "outputs")[0])
    errors = [e for e in run.table.column("error").to_pylist() if e]
    assert len(errors) == 1 and "server said no" in errors[0] and run.instrument.n_errors == 1
    assert "errors (excluded) 1" in done.stdout


@pytest.mark.realdata
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupt_or_kill_keeps_finished_rows(tmp_path, data_dir, sig):
    args = ["--config-dir", str(USER_PROJECT / "conf"), "benchmark=locomo", "arm=keyword", "+arm.delay_ms=2", "progress=false"]
    proc = subprocess.Popen([*memrun_exe(), *args], cwd=tmp_path, env={**os.environ, **user_env(data_dir)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180  # only against a hang: a loaded machine starts slowly
    while time.monotonic() < deadline and not list((tmp_path / "outputs").rglob("part-*.parquet")):
        time.sleep(0.1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=180)
    run = read_run(run_dirs(tmp_path / "outputs")[0])
    assert 0 < run.table.num_rows < 1986
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and f"interrupted; the rows that finished are in {run_dirs(tmp_path / 'outputs')[0]}" in err
        assert "Run the same command again" in err
        assert run.complete and run.instrument.status == "interrupted" and run.instrument.n_rows == run.table.num_rows
    else:
        assert not run.complete and run.instrument.status == "running"


@pytest.mark.realdata
def test_an_interrupted_run_in_a_named_folder_goes_on_in_another(tmp_path, data_dir):
    """The folder a command names holds the interrupted run: the advice is another folder (the
    same command was refused as 'already holds a run'), and following it takes the rows over."""
    args = ["--config-dir", str(USER_PROJECT / "conf"), "benchmark=locomo", "arm=keyword", "+arm.delay_ms=2",
            "progress=false"]
    env = {**os.environ, **user_env(data_dir)}
    proc = subprocess.Popen([*memrun_exe(), *args, "hydra.run.dir=runs/a"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180  # only against a hang: a loaded machine starts slowly
    while time.monotonic() < deadline and not list((tmp_path / "runs").rglob("part-*.parquet")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130 and "Run the same command with another hydra.run.dir to go on from them" in err
    kept = read_run(tmp_path / "runs" / "a").table.num_rows
    again = run_memrun([*args, "hydra.run.dir=runs/a"], tmp_path, user_env(data_dir))
    assert again.returncode == 2 and "already holds a run" in again.stderr and "goes on from its rows" in again.stderr
    other = run_memrun([*args, "hydra.run.dir=runs/b"], tmp_path, user_env(data_dir))
    assert other.returncode == 0 and f"its {kept} rows are kept" in other.stderr, other.stderr
    # the instrument cannot tell a user arm's code changed in between: the line says whose rows they are
    assert "made by the code that ran then (after a change to the arm's code, resume=false starts over)" in other.stderr
    assert read_run(tmp_path / "runs" / "b").table.num_rows == 1986


def test_wheel_carries_the_configs(tmp_path):
    """A non-editable install must find conf/ inside the package."""
    root = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode and "No matching distribution found for hatchling" in done.stderr:
        pytest.skip("hatchling not reachable")
    assert done.returncode == 0, done.stderr
    import zipfile

    (wheel,) = tmp_path.glob("memrun-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("memrun/conf/config.yaml", "memrun/conf/benchmark/locomo.yaml", "memrun/conf/arm/bm25.yaml",
              "memrun/conf/judge/none.yaml", "memrun/benchmarks/data/synthetic.json"):
        assert f in names
    assert not any(n.startswith("conf/") for n in names)


@pytest.mark.parametrize(
    "breaks,needle",
    [
        ("strings", "BrokenArm.search returned a str in its list; each hit must be a memrun.records.Hit"),
        ("none", "BrokenArm.search returned NoneType; it must return a list of memrun.records.Hit"),
        ("describe_raises", "BrokenArm.describe() raised RuntimeError: no health endpoint"),
        ("describe_list", "BrokenArm.describe() returned list; it must return a dict"),
        ("describe_benchmark", "BrokenArm.describe() reports benchmark, which the run sets itself"),
        ("ingest_raises", "every item failed (30 rows, kept in the run folder); the first error: ingest: ValueError"),
    ],
)
def test_an_arm_that_breaks_the_protocol_is_one_line(tmp_path, breaks, needle):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=broken", f"arm.breaks={breaks}",
                       "progress=false"], tmp_path, user_env())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert needle in done.stderr.strip().splitlines()[-1]


def test_close_raising_keeps_every_row(tmp_path):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=broken", "arm.breaks=close_raises",
                       "progress=false"], tmp_path, user_env())
    assert done.returncode == 0, done.stderr
    run = read_run(run_dirs(tmp_path / "outputs")[0])
    assert run.complete and run.table.num_rows == 30
    assert any("arm.close() raised RuntimeError: boom close" in w for w in run.instrument.warnings)
    assert run.instrument.arm_info == {"note": "kept as arm_info"}
    assert "boom close" in done.stderr


@pytest.mark.parametrize("override,needle", [
    ("arm.top_k=0", "arm.top_k=0: must be a positive integer"),
    ("repeats=0", "repeats=0: must be a positive integer"),
    ("arm.top_k=ten", "arm.top_k='ten': must be a positive integer"),
])
def test_out_of_range_values_are_config_errors(tmp_path, override, needle):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword", override, "progress=false"],
                      tmp_path, user_env())
    assert done.returncode == 2 and needle in done.stderr
    assert not (tmp_path / "outputs").exists()  # no folder, and no empty parents


@pytest.mark.parametrize("ks", ["[0]", "[]", "[5,-1]"])
def test_a_check_inside_a_resolver_reads_as_its_own_message(tmp_path, capsys, monkeypatch, ks):
    monkeypatch.chdir(tmp_path)  # ks is read through ${memrun_top_k:}: OmegaConf wraps memrun's ConfigError
    assert cli_main([f"ks={ks}", "progress=false"]) == 2
    assert capsys.readouterr().err.strip() == f"memrun: error: ks={ks.replace(',', ', ')}: cut-offs must be positive integers"


def test_sigterm_keeps_finished_rows(tmp_path):
    args = ["--config-dir", str(USER_PROJECT / "conf"), "arm=keyword", "+arm.delay_ms=300", "progress=false"]
    proc = subprocess.Popen([*memrun_exe(), *args], cwd=tmp_path, env={**os.environ, **user_env()},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Signalled once rows are on disk (a part file: the writer flushes about once a second),
    # not after a fixed sleep that a loaded machine could spend on set-up; 30 searches of
    # 0.3 s leave seconds before the run would finish.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list((tmp_path / "outputs").rglob("part-*.parquet")):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=180)
    assert proc.returncode == 130
    run = read_run(run_dirs(tmp_path / "outputs")[0])
    assert run.complete and run.instrument.status == "interrupted" and 0 < run.table.num_rows < 30


def test_a_full_disk_is_one_line(tmp_path, monkeypatch, capsys):
    import errno

    import pyarrow.parquet as pq

    from memrun.cli import main

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(args[1]))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pq, "write_table", full)
    assert main(["progress=false"]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning: ")]
    assert len(err) == 1 and err[0].startswith("memrun: error: No space left on device: ") and "(run folder " in err[0]
    # every write failed: no row was kept, so none is promised (it said "the rows written so far stay")
    assert err[0].endswith("free space on that disk (or point hydra.run.dir at another) and run the same command "
                           "again; no row had been written (the run folder is not kept)")
    assert run_dirs(tmp_path / "outputs") == []


def test_a_disk_filling_up_after_some_rows_says_they_are_kept(tmp_path, monkeypatch, capsys):
    import errno

    import pyarrow.parquet as pq

    from memrun.cli import main

    write_table, calls = pq.write_table, []

    def fills(*args, **kwargs):
        calls.append(args[1])
        if len(calls) > 1:  # the first part is written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(args[1]))
        return write_table(*args, **kwargs)

    from types import SimpleNamespace

    from memrun.io import writer

    ticks = iter(range(0, 10**6, 2))  # every row arrives 2 s after the last: each is flushed as a part
    monkeypatch.setattr(writer, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pq, "write_table", fills)
    assert main(["progress=false"]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning: ")]
    assert err[-1].endswith("again; the rows written so far stay in the run folder"), err


def test_a_new_key_of_a_map_says_how_to_add_it(capsys):
    """``arm.headers={X-Session: abc}`` said only "unknown config key 'arm.headers.X-Session'"."""
    from memrun.cli import main as cli_main

    assert cli_main(["--cfg", "job", "arm=http", "arm.base_url=http://h/", "arm.headers={X-Session: abc}"]) == 2
    err = capsys.readouterr().err
    assert ("arm.headers is a map: add the key X-Session with '+arm.headers.X-Session=<value>', or replace the "
            "whole map with '++arm.headers={...}'") in err
    assert cli_main(["--cfg", "job", "arm=http", "arm.base_url=http://h/", "++arm.headers={X-Session: abc}"]) == 0
    assert "X-Session: '***'" in capsys.readouterr().out


@pytest.mark.parametrize("override", ["benchmark.categories={1: a, 6: mine}", "benchmark.categories.6=mine",
                                      "+benchmark.categories.6=mine"])
def test_a_new_key_of_an_integer_keyed_map_says_a_way_that_adds_it(override, capsys):
    """benchmark.categories is keyed by integers: the advice '+benchmark.categories.6=<value>'
    failed as 'Key 6 (str) is incompatible with (int)' (a dotted key is text), and so did
    that override itself, with no advice; the advice given is one that composes."""
    from memrun.cli import main as cli_main

    assert cli_main(["--cfg", "job", "benchmark=locomo", override]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["memrun: error: benchmark.categories is a map: add the key 6 with "
                   "'+benchmark.categories={6: <value>}', or replace the whole map with '++benchmark.categories={...}'"]
    assert cli_main(["--cfg", "job", "benchmark=locomo", "+benchmark.categories={6: mine}"]) == 0
    assert "    6: mine\n" in capsys.readouterr().out


@pytest.mark.parametrize(("override", "message"), [
    ("+arm.tok_k=5", "+arm.tok_k: arm has no key 'tok_k' (memrun would not read it); did you mean 'top_k'?"),
    ("arm.warmup=5", "arm.warmup=5: arm.warmup is true or false"),
])
def test_cfg_job_refuses_what_a_run_refuses(override, message, tmp_path, monkeypatch, capsys):
    """--cfg shows the config a run of the same overrides would run: one a run refuses (a key
    memrun would not read, a boolean given as a number) is refused there too, not printed."""
    monkeypatch.chdir(tmp_path)
    for args in (["--cfg", "job", override], [override, "progress=false"]):  # --cfg as the run itself
        assert cli_main(args) == 2
        printed = capsys.readouterr()
        assert printed.out == "" and printed.err.strip().splitlines()[-1].startswith(f"memrun: error: {message}")
    assert cli_main(["--cfg", "job", "+arm.env.FOO=1", "arm=mcp"]) == 0  # a free-form node takes new keys
    assert "  env:\n    FOO: '***'\n" in capsys.readouterr().out  # (env values are redacted as secrets may be)


@pytest.mark.parametrize(("args", "read"), [
    (["arm=bm25", "-m", "ks=[1],[3]"], ["-m", "arm=bm25", "ks=[1],[3]"]),
    (["arm=mine", "--config-dir", "myconf", "benchmark=locomo"], ["--config-dir", "myconf", "arm=mine", "benchmark=locomo"]),
    (["ks=[1]", "--cf", "job", "-p", "ks"], ["--cf", "job", "-p", "ks", "ks=[1]"]),
    (["ks=[1]", "--info", "ks=[3]"], ["--info=all", "ks=[1]", "ks=[3]"]),  # moved first, --info would read ks=[3]
    (["ks=[1]", "--info", "config"], ["--info", "config", "ks=[1]"]),
    (["ks=[1]", "--cfg"], ["ks=[1]", "--cfg"]),  # no value: as given, for Hydra's "expected one argument"
    (["--cfg", "job", "ks=[1]"], ["--cfg", "job", "ks=[1]"]),
])
def test_a_flag_after_an_override_is_read_before_them(args, read):
    assert flags_first(args) == read


def test_a_run_reads_overrides_on_both_sides_of_a_flag(tmp_path, monkeypatch, capsys):
    """'memrun benchmark=synthetic --cfg job ks=[3]' failed with Hydra's nine-line usage and
    'unrecognized arguments: ks=[3]': argparse read one run of overrides, before the flag."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["benchmark=synthetic", "--cfg", "job", "ks=[3]"]) == 0
    out = capsys.readouterr().out
    assert "name: synthetic" in out and "ks:\n- 3\n" in out


def test_the_collector_is_off_during_start_up_only(tmp_path, monkeypatch):
    """Start-up (Hydra, config, dataset, arm) builds long-lived objects, so the CLI keeps
    the cyclic collector off until the items begin; the items run with it on, and every
    way out of :func:`memrun.cli.main` (a run, a refused config) turns it back on."""
    import gc

    from memrun.pipeline import item_stages, outer_stages

    seen: dict[str, bool] = {}
    load, items = outer_stages.load, item_stages.ingest_and_search

    def spy_load(*args, **kwargs):
        seen["load"] = gc.isenabled()
        return load(*args, **kwargs)

    def spy_items(*args, **kwargs):
        seen["items"] = gc.isenabled()
        return items(*args, **kwargs)

    monkeypatch.setattr(outer_stages, "load", spy_load)
    monkeypatch.setattr(item_stages, "ingest_and_search", spy_items)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    assert cli_main(["progress=false"]) == 0
    assert seen == {"load": False, "items": True} and gc.isenabled()
    assert cli_main(["arm.top_k=many", "progress=false"]) == 2 and gc.isenabled()

    from memrun import config

    def broken() -> None:
        raise RuntimeError("a broken install")

    monkeypatch.setattr(config, "register", broken)
    with pytest.raises(RuntimeError, match="broken install"):
        cli_main(["progress=false"])
    assert gc.isenabled()
