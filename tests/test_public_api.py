"""memrun's public surface (memrun/__init__.py): what it exports, that it loads lazily, and
docs/api.md's session, executed as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import memrun

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_exported_members():
    # Every name in __all__ resolves to an object memrun defines, and nothing else public shows.
    for name in memrun.__all__:
        value = getattr(memrun, name)
        if name != "__version__":
            assert value.__module__.startswith("memrun."), name
    public = {n for n in dir(memrun) if not n.startswith("_")}
    assert public == {n for n in memrun.__all__ if not n.startswith("_")}
    assert set(memrun.__all__) == {"__version__", *memrun._EXPORTS}
    assert {"run", "compare", "CompareRequest", "CompareOutcome", "read_run", "Arm", "Benchmark", "Judge",
            "Hit", "Record", "MemrunError"} <= set(memrun.__all__)


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import():
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        memrun.nosuch  # noqa: B018
    from memrun import cli  # a submodule, not an export

    assert cli.__name__ == "memrun.cli"


def test_importing_memrun_loads_no_submodule():
    # memrun.lazy only: the one home of deferred loading (its exports() is memrun's __getattr__)
    code = "import sys, memrun; print(sorted(m for m in sys.modules if m.startswith('memrun')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['memrun', 'memrun.lazy']"


def test_the_errors_are_one_tree():
    for name in memrun.__all__:
        value = getattr(memrun, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, memrun.MemrunError), name


def test_the_api_session_in_the_docs_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    exec(compile("\n".join(blocks), str(DOCS), "exec"), {})  # noqa: S102 - the documented session itself
    out = capsys.readouterr().out
    assert "30 items; recall@1" in out and "wins/ties/losses" in out
    assert "refused: the runs are not comparable" in out and "error: runs/missing" in out
    assert (tmp_path / "runs" / "bm25" / "items.parquet").is_file()


@pytest.mark.parametrize("overrides", ["benchmark=synthetic", ["benchmark=synthetic", 3]])
def test_run_refuses_overrides_that_are_not_a_list_of_strings(overrides, tmp_path):
    """A str is a Sequence[str]: memrun.run("benchmark=synthetic") composed the overrides 'b', 'e', ...
    and said it could not parse the override 'b'."""
    import memrun

    with pytest.raises(memrun.ConfigError, match=r"overrides must be a list of 'key=value' strings"):
        memrun.run(overrides, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("overrides, needle", [
    ({"arm": "bm25"}, r"e.g. \['arm=bm25'\], not a dict"),  # was: "cannot parse the override 'arm'"
    (None, r"e.g. \['arm=bm25'\] \(or \[\] for the defaults\), not NoneType"),  # was a TypeError
    (["arm=bm25", b"ks=[1]"], r"e.g. .*: overrides\[1\] is bytes b'ks=\[1\]'"),  # was: e.g. ["['arm=bm25', b'ks=[1]']"]
])
def test_run_names_the_fix_for_overrides_of_the_wrong_shape(overrides, needle, tmp_path):
    with pytest.raises(memrun.ConfigError, match=r"overrides must be a list of 'key=value' strings, " + needle):
        memrun.run(overrides, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_run_composes_every_override_a_generator_yields(tmp_path):
    """The type check read the generator to its end, so the run composed none of its
    overrides: a run of the defaults (recall@1..@10 at top_k 10), complete, exit 0."""
    result = memrun.run((o for o in ["benchmark=synthetic", "ks=[1]", "arm.top_k=1"]), out_dir=tmp_path / "run")
    assert result.status is memrun.RunStatus.COMPLETE
    assert [k for k in result.summary["overall_all"] if k.startswith("recall@")] == ["recall@1"]


@pytest.mark.parametrize("call, error, needle", [
    (lambda: memrun.run(["benchmark=synthetic"], out_dir=None), memrun.ConfigError, "out_dir must be a folder path"),
    (lambda: memrun.read_run(None), memrun.RunTableError, "read_run takes a run folder or items.parquet path"),
    (lambda: memrun.read_run("runs/x", columns="item_id"), memrun.RunTableError, "read_run's columns: a list"),
    (lambda: memrun.compare("runs/a"), memrun.CompareUsageError, "memrun.compare takes a memrun.CompareRequest"),
    (lambda: memrun.CompareRequest(a=None, b="runs/b"), memrun.CompareUsageError, "a is None and no baseline"),
    (lambda: memrun.CompareRequest(a="runs/a", b=None), memrun.CompareUsageError, r"CompareRequest.b: a run folder"),
    (lambda: memrun.CompareRequest(a="runs/a"), memrun.CompareUsageError, r"CompareRequest.b: run B \(the change\) is not"),
    (lambda: memrun.CompareRequest(b="runs/b"), memrun.CompareUsageError, "a is None and no baseline"),
    (lambda: memrun.CompareRequest(a="a", b="b", resamples="100"), memrun.CompareUsageError,
     r"CompareRequest.resamples \(--resamples\): an int, not str '100'"),
    (lambda: memrun.CompareRequest(a="a", b="b", gate_band=float("nan")), memrun.CompareUsageError,
     r"CompareRequest.gate_band \(--gate-band\): a finite number or None, not float nan"),
    (lambda: memrun.CompareRequest(a="a", b="b", cluster_by=""), memrun.CompareUsageError,
     r"CompareRequest.cluster_by \(--cluster-by\) is empty; name a column, or none"),  # was: items resampled alone
    (lambda: memrun.CompareRequest(a="a", b="b", allow_fake="yes"), memrun.CompareUsageError, "True or False"),
    (lambda: memrun.CompareRequest(a="a", b="b", treatments=[3]), memrun.CompareUsageError, "CompareRequest.treatments"),
    # was compared with A found as under 'auto' (the command line refuses --baseline newest)
    (lambda: memrun.CompareRequest(a=None, b="b", baseline="newest"), memrun.CompareUsageError,
     r"CompareRequest.baseline \(--baseline\): 'auto' or None, not 'newest'"),
    (lambda: memrun.CompareRequest(a="a", b="b", judge_calibration={"tpr": 1}), memrun.CompareUsageError,
     r"CompareRequest.judge_calibration: a JSON file path"),  # was: 'a run folder or items.parquet path'
])
def test_an_argument_of_the_wrong_type_is_a_memrun_error(call, error, needle):
    """docs/api.md: every error a user can cause is a MemrunError. These were TypeError,
    AttributeError and AssertionError tracebacks from deep inside."""
    with pytest.raises(error, match=needle):
        call()


def test_compare_request_reads_paths_and_one_treatment_string_as_a_user_means_them(tmp_path):
    request = memrun.CompareRequest(a=tmp_path / "a", b=tmp_path / "b", treatments="lexical_scoring,top_k")
    assert (request.a, request.b) == (str(tmp_path / "a"), str(tmp_path / "b"))
    assert request.treatments == ("lexical_scoring", "top_k")  # not ('l', 'e', 'x', ...)
    # every path a request holds, as docs/api.md says: gate and runs_dir refused a Path ('a str, not PosixPath')
    request = memrun.CompareRequest(a=None, b="b", baseline="auto", runs_dir=tmp_path, gate=tmp_path / "g.yaml",
                                    judge_calibration=str(tmp_path / "cal.json"))
    assert (request.runs_dir, request.gate) == (str(tmp_path), str(tmp_path / "g.yaml"))
    assert str(request.judge_calibration) == str(tmp_path / "cal.json")
    assert memrun.CompareRequest(b="b", baseline="auto").a is None  # A left out, as docs/api.md says: was a TypeError


def test_compare_without_a_metric_reads_the_runs_headline_metric(tmp_path):
    """Runs measured at ks=[1, 3] were refused for lacking recall@5 (their summaries, reports
    and sweep table headline recall@1): the comparison now reads that headline metric."""
    settings = ["benchmark=synthetic", "arm.top_k=3", "ks=[1,3]"]
    memrun.run([*settings, "arm=bm25"], out_dir=tmp_path / "a")
    memrun.run([*settings, "arm=bm25_nostop"], out_dir=tmp_path / "b")
    outcome = memrun.compare(memrun.CompareRequest(a=tmp_path / "a", b=tmp_path / "b", treatments="lexical_scoring"))
    assert outcome.status == "compared" and outcome.request.metric == "recall@1"
    assert outcome.comparison is not None and outcome.comparison.metric == "recall@1"
    assert outcome.request.metric_given is False  # named by no one: no "--metric is not read" warning


@pytest.mark.parametrize("overrides, needle", [
    (["-m", "arm=bm25,bm25_nostop"], "-m: memrun.run takes key=value overrides, not the command line's flags"),
    (["hydra.run.dir=elsewhere"], "hydra.run.dir=elsewhere: memrun.run has no Hydra job to configure"),  # was ignored
    (["arm=bm25,bm25_nostop"], "arm=bm25,bm25_nostop: values separated by commas are a sweep"),  # "Ambiguous value"
    (["arm.top_k=range(1,3)"], r"arm.top_k=range\(1,3\): a sweep, one job per value: run it with -m"),
])
def test_run_refuses_what_only_the_command_line_can_do(overrides, needle, tmp_path):
    with pytest.raises(memrun.ConfigError, match=needle):
        memrun.run(overrides, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists() and not (tmp_path / "elsewhere").exists()


def test_run_into_a_file_is_one_line(tmp_path):
    (tmp_path / "taken").write_text("mine")
    with pytest.raises(memrun.ConfigError, match="out_dir=.*taken is a file"):  # was FileExistsError
        memrun.run(["benchmark=synthetic"], out_dir=tmp_path / "taken")
