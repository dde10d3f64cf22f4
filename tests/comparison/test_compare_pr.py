"""The pull-request loop's compare: markdown for every outcome, --gate files, --baseline auto."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrun.cli import main
from memrun.stats import ExitCode
from run_tables import cli_run, compare_cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outputs")
    return {
        "a_old": cli_run(root, "a_old"),
        "a": cli_run(root, "a"),
        "b_again": cli_run(root, "b_again", "arm=bm25_nostop"),  # B's own configuration: never a baseline
        "b": cli_run(root, "b", "arm=bm25_nostop"),
        "sliced": cli_run(root, "sliced", "benchmark.slice.category=[single-hop,temporal]"),
        "root": root,
    }


def test_markdown_names_runs_by_id_and_config_with_calls_and_config_diff(runs, capsys):
    code, md, _ = compare_cli(capsys, "--treatment", "lexical_scoring", str(runs["a"]), str(runs["b"]), "--format", "markdown")
    lines = md.splitlines()
    assert lines[0] == "<!-- memrun-compare: synthetic/bm25_nostop -->"
    assert f"(exit code {code})" in lines[1]
    assert str(runs["root"]) not in md  # run ids and configs, never local paths
    assert "- A = `synthetic-bm25-" in md and "- B = `synthetic-bm25_nostop-" in md and "`arm=bm25_nostop`" in md
    assert "- A calls: none (no LLM calls)" in md and "- B calls: none (no LLM calls)" in md
    diff = md[md.index("```diff"):]
    assert '-arm.name: "bm25"' in diff and '+arm.name: "bm25_nostop"' in diff and '+arm.stopwords: null' in diff
    assert "arm.k1" not in diff  # unchanged keys stay out


def test_refusals_and_usage_errors_render_in_markdown(runs, capsys):
    code, md, err = compare_cli(capsys, str(runs["a"]), str(runs["sliced"]), "--format", "markdown")
    assert code == ExitCode.REFUSAL and "refused" in err
    assert md.startswith("<!-- memrun-compare: synthetic/bm25 -->\n### memrun compare: **REFUSED** (exit code 3)")
    assert "--treatment slice" in md and '+benchmark.slice.category: ["single-hop", "temporal"]' in md
    code, md, _ = compare_cli(capsys, str(runs["a"]), str(runs["root"] / "missing"), "--format", "markdown")
    assert code == ExitCode.USAGE_ERROR
    assert md.startswith("<!-- memrun-compare: synthetic/bm25 -->\n### memrun compare: **USAGE ERROR** (exit code 4)")
    assert "no such file or folder" in md and "- B = (unreadable run)" in md


def test_bad_arguments_in_markdown_still_write_a_document(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "only-one", "--format", "markdown"])
    assert exc.value.code == ExitCode.USAGE_ERROR
    assert capsys.readouterr().out.startswith("<!-- memrun-compare: unknown/unknown -->")


def test_gate_file_sets_band_delta_metric_and_flags_override(runs, tmp_path, capsys):
    gate = tmp_path / "g.yaml"
    gate.write_text("metric: mrr\nband: 7.5\ngate-min-delta: -2\ncategories: [single-hop, temporal]\n")
    code, out, _ = compare_cli(capsys, "--treatment", "lexical_scoring", str(runs["a"]), str(runs["b"]), "--gate", str(gate), "--format", "json")
    d = json.loads(out)
    assert d["metric"] == "mrr" and d["verdict"]["band"] == pytest.approx(0.075)
    assert d["verdict"]["min_delta"] == pytest.approx(-0.02) and set(d["per_category"]) <= {"single-hop", "temporal"}
    code, out, _ = compare_cli(capsys, "--treatment", "lexical_scoring", str(runs["a"]), str(runs["b"]), "--gate", str(gate), "--gate-band", "3",
                           "--metric", "recall@1", "--format", "json")
    d = json.loads(out)
    assert d["metric"] == "recall@1" and d["verdict"]["band"] == pytest.approx(0.03)
    code, out, _ = compare_cli(capsys, "--treatment", "lexical_scoring", str(runs["a"]), str(runs["b"]), "--gate", "synthetic", "--format", "json")
    assert json.loads(out)["verdict"]["band"] == pytest.approx(0.10)  # conf/gates/synthetic.yaml
    gate.write_text("bandd: 3\n")
    code, _, err = compare_cli(capsys, str(runs["a"]), str(runs["b"]), "--gate", str(gate))
    assert code == ExitCode.USAGE_ERROR and "unknown key(s): bandd" in err
    gate.write_text("band: 7.5\nmetric: mrr\nband: 1\n")  # YAML would keep 1 silently
    code, _, err = compare_cli(capsys, str(runs["a"]), str(runs["b"]), "--gate", str(gate))
    assert code == ExitCode.USAGE_ERROR and "key 'band' is given twice in one mapping" in err
    code, _, err = compare_cli(capsys, str(runs["a"]), str(runs["b"]), "--gate", "nosuch")
    assert code == ExitCode.USAGE_ERROR and "known gates: locomo" in err


def test_baseline_auto_takes_the_newest_comparable_run_of_another_configuration(runs, capsys):
    root = str(runs["root"])
    code, out, err = compare_cli(capsys, "--treatment", "lexical_scoring", "--baseline", "auto", str(runs["b"]), "--runs-dir", root, "--format", "json")
    assert code in (0, 1, 2) and f"baseline: {runs['a']} (run synthetic-bm25-" in err
    assert json.loads(out)["run_a"] == str(runs["a"])  # not a_old (older), not b_again (B's configuration)
    code, md, _ = compare_cli(capsys, "--treatment", "lexical_scoring", "--baseline", "auto", str(runs["b"]), "--runs-dir", root, "--format", "markdown")
    assert "(chosen by `--baseline auto`" in md and str(runs["a"]) not in md
    # the sliced run differs in a comparability field: a baseline only when it is the treatment
    code, _, err = compare_cli(capsys, "--baseline", "auto", str(runs["sliced"]), "--runs-dir", root)
    assert code == ExitCode.USAGE_ERROR and "no finished run" in err
    code, _, err = compare_cli(capsys, "--baseline", "auto", str(runs["sliced"]), "--runs-dir", root, "--treatment", "slice,lexical_scoring")
    assert code in (0, 1, 2) and f"baseline: {runs['b']} " in err  # slice named as the treatment: the newest


def test_calls_line_prices_each_run_reader_exactly_and_judges_at_the_judge_model(llm_env, tmp_path, capsys):
    from accuracy.helpers import execute_run
    from accuracy.test_accuracy_run import gold_reader

    llm_env.responder = gold_reader
    a, _ = execute_run(tmp_path, "judge=gpt41", name="a")
    b, _ = execute_run(tmp_path, "judge=gpt41", "arm.top_k=1", name="b")
    code, out, _ = compare_cli(capsys, str(a), str(b), "--treatment", "top_k", "--format", "json")  # B reads 1 hit
    runs = json.loads(out)["runs"]
    # 30 reader calls (gpt-4.1-mini: $0.40 / $1.60 per 1M) and 30 judge calls (gpt-4.1: $2 / $8), 10 + 5 tokens each
    assert runs["a"]["cost_usd"] == pytest.approx((300 * 0.4 + 150 * 1.6 + 300 * 2 + 150 * 8) / 1e6)
    assert runs["b"]["calls"]["made"] < 60 and runs["b"]["cost_usd"] < runs["a"]["cost_usd"]
    code, md, _ = compare_cli(capsys, str(a), str(b), "--treatment", "top_k", "--format", "markdown")
    assert "- A calls: made 60, cached 0, failed 0 | tokens 600 prompt + 300 completion | cost \\$0.00" in md
