"""Retrieval depth (``arm.top_k``, the instrument's ``top_k``) in ``memrun compare``: a verdict
never passes or fails on a depth difference alone. MRR reads each whole ranking, so runs of
different depths compare on it only with ``--treatment top_k``; a metric @K within both depths
reads the same top K and compares; on the accuracy axis the reader sees every hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrun.stats import ExitCode
from run_tables import accuracy_run, cli_run, compare_cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outputs")
    return {"deep": cli_run(root, "deep"), "shallow": cli_run(root, "shallow", "arm.top_k=3"), "root": root}


def test_mrr_of_two_depths_is_refused_naming_the_field_and_the_fixes(runs, capsys):
    a, b = str(runs["deep"]), str(runs["shallow"])
    code, _, err = compare_cli(capsys, a, b, "--metric", "mrr")
    assert code == ExitCode.REFUSAL and "  top_k: A=10 B=3: the retrieval depth (arm.top_k)" in err
    assert "--treatment top_k" in err and "metric @K with K <= 3" in err
    code, out, _ = compare_cli(capsys, a, b, "--metric", "mrr", "--treatment", "top_k")
    assert code != ExitCode.REFUSAL and "treatments: top_k" in out
    # recall@1 reads the same top hit of both rankings: compared, and nothing differs
    code, out, err = compare_cli(capsys, a, b, "--metric", "recall@1")
    assert "refused" not in err and "wins 0" in out and "losses 0" in out
    code, _, err = compare_cli(capsys, a, b, "--metric", "recall@5")  # beyond B's 3
    assert code == ExitCode.REFUSAL and "top_k: A=10 B=3" in err


def test_baseline_auto_takes_another_depth_only_where_the_metric_does_not_see_it(runs, capsys):
    root, b = str(runs["root"]), str(runs["shallow"])
    code, _, err = compare_cli(capsys, "--baseline", "auto", b, "--runs-dir", root, "--metric", "mrr")
    assert code == ExitCode.USAGE_ERROR and "no finished run" in err
    assert "1 finished run(s) differ only in top_k (arm.top_k), which mrr reads: pass --treatment top_k" in err
    code, _, err = compare_cli(capsys, "--baseline", "auto", b, "--runs-dir", root, "--metric", "recall@1")
    assert code in (0, 1, 2) and f"baseline: {runs['deep']} " in err
    code, _, err = compare_cli(capsys, "--baseline", "auto", b, "--runs-dir", root, "--metric", "mrr",
                           "--treatment", "top_k")
    assert code in (0, 1, 2) and f"baseline: {runs['deep']} " in err


def test_on_the_accuracy_axis_the_depth_is_a_treatment_whatever_the_metric(tmp_path, capsys):
    labels = {f"i{i:02d}": ["correct" if i % 3 else "wrong"] for i in range(40)}
    a = accuracy_run(tmp_path / "a", labels, top_k=10)
    b = accuracy_run(tmp_path / "b", labels, top_k=5)
    code, _, err = compare_cli(capsys, str(a), str(b), "--metric", "recall@1")
    assert code == ExitCode.REFUSAL and "  top_k: A=10 B=5" in err and "at a depth both runs reach" not in err
    code, out, _ = compare_cli(capsys, str(a), str(b), "--treatment", "top_k")
    assert code != ExitCode.REFUSAL and "treatments: top_k" in out
