"""``memrun compare`` and ``memrun null-band`` on run tables written like real runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from conftest import run_dirs, run_memrun
from memrun.commands.compare import main as compare_main
from memrun.commands.null_band import null_band_main
from memrun.core.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN, Instrument
from memrun.stats import ExitCode
from run_tables import accuracy_run, compare_json, own_clusters, retrieval_run, wtl


@pytest.mark.parametrize(
    "wins,ties,losses,min_delta,outcome,reason,code",
    [
        (40, 440, 20, "0", "pass", "lower_bound_above_threshold", ExitCode.PASS),
        (20, 440, 40, "0", "fail", "upper_bound_below_threshold", ExitCode.FAIL),
        (2, 26, 2, "0", "unresolved", "underpowered", ExitCode.UNRESOLVED),
        (40, 420, 40, "0", "unresolved", "inside_null_band", ExitCode.UNRESOLVED),
        (20, 440, 40, "-10", "pass", "lower_bound_above_threshold", ExitCode.PASS),  # non-inferiority gate
    ],
)
def test_every_verdict_branch(tmp_path, capsys, wins, ties, losses, min_delta, outcome, reason, code):
    a, b = wtl(wins, ties, losses)
    ra = retrieval_run(tmp_path / "a", a, own_clusters(len(a)))
    rb = retrieval_run(tmp_path / "b", b, own_clusters(len(b)))
    got, d = compare_json(capsys, str(ra), str(rb), "--cluster-by", "none", "--gate-min-delta", min_delta)
    assert got == code and d["verdict"]["outcome"] == outcome and d["verdict"]["reason"] == reason
    o = d["overall"]
    assert (o["wins"], o["ties"], o["losses"]) == (wins, ties, losses)
    assert o["delta"] == pytest.approx((wins - losses) / (wins + ties + losses))


def test_reference_row_through_the_cli(tmp_path, capsys):
    """60 items, 6 clusters of 10, 8/50/2: the bootstrap is the reference row +10.0 pp [+0.0, +30.0];
    with 6 equal clusters the t interval on the CR2 SE (Bell-McCaffrey df 5 of equal clusters),
    its critical value at least t(5) and raised by the design check, decides."""
    a, b = wtl(8, 50, 2)
    clusters = [f"c{i // 10}" for i in range(60)]
    code, d = compare_json(capsys, str(retrieval_run(tmp_path / "a", a, clusters)),
                           str(retrieval_run(tmp_path / "b", b, clusters)))
    o = d["overall"]
    boot = o["bootstrap"]
    assert (round(100 * boot["mean"], 1), round(100 * boot["low"], 1), round(100 * boot["high"], 1)) == (10.0, 0.0, 30.0)
    # CR2 by hand: cluster c0 holds 8 wins and 2 losses (sum 6), the others sum 0; mean 0.1.
    residual_sums = np.array([6 - 10 * 0.1] + [-10 * 0.1] * 5)
    se = np.sqrt(np.sum(residual_sums**2 / (1 - 10 / 60)) / 60**2)
    half = sps.t.ppf(0.975, 5) * se
    assert o["small_clusters"]["df"] == pytest.approx(5)
    assert (o["small_clusters"]["low"], o["small_clusters"]["high"]) == pytest.approx((0.1 - half, 0.1 + half))
    check = o["design_check"]
    assert o["interval"] == "calibrated_t" and check["nominal_crit"] == pytest.approx(sps.t.ppf(0.975, 5))
    assert o["se"] == pytest.approx(se) and o["low"] == pytest.approx(0.1 - check["crit_up"] * se)
    assert o["low"] <= 0.1 - half + 1e-12
    assert o["n_clusters"] == 6 and code == ExitCode.UNRESOLVED


@pytest.mark.parametrize("field_name", sorted(Instrument.comparability_fields()))
def test_each_comparability_field_refuses(tmp_path, capsys, field_name):
    a, b = wtl(5, 20, 1)
    ra = retrieval_run(tmp_path / "a", a)
    value = True if field_name == "crediting" else (384 if field_name == "embedder_dim" else "other")
    rb = retrieval_run(tmp_path / "b", b, **{field_name: value})
    assert compare_main([str(ra), str(rb)]) == ExitCode.REFUSAL
    err = capsys.readouterr().err
    assert "refused: the runs are not comparable (1 field(s) differ)" in err
    assert f"  {field_name}: A=" in err and repr(value) in err
    why = Instrument.comparability_fields()[field_name]
    assert why in err
    # the refusal offers only flags that work: --treatment axis is refused, so it is not offered
    offered = f"--treatment {field_name}" in err
    assert offered == (field_name != "axis"), err
    if field_name == "axis":
        assert "axis cannot be a treatment" in err and "compare two runs on one axis" in err
    # naming it as the treatment compares; the header names it. The axis never can be one:
    # recall@K and judged accuracy are never compared in one number.
    code = compare_main([str(ra), str(rb), "--treatment", field_name])
    captured = capsys.readouterr()
    if field_name == "axis":
        assert code == ExitCode.USAGE_ERROR and "--treatment axis: recall@K and judged accuracy" in captured.err
        return
    assert code != ExitCode.REFUSAL and f"treatments: {field_name}" in captured.out


def test_missing_field_on_one_side_counts_as_a_difference(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True] * 5, embedder="m")
    rb = retrieval_run(tmp_path / "b", [True] * 5)
    assert compare_main([str(ra), str(rb)]) == ExitCode.REFUSAL
    assert "embedder: A='m' B=None" in capsys.readouterr().err


def test_allow_noncomparable_labels_every_line(tmp_path, capsys):
    a, b = wtl(5, 20, 1)
    ra = retrieval_run(tmp_path / "a", a)
    rb = retrieval_run(tmp_path / "b", b, search_mode="vector")
    assert compare_main([str(ra), str(rb), "--allow-noncomparable"]) == ExitCode.REFUSAL  # no gate passes
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(ln.startswith("NON-COMPARABLE") for ln in lines)
    assert any("differs: search_mode" in ln for ln in lines) and any("exit code 3" in ln for ln in lines)
    compare_main([str(ra), str(rb), "--allow-noncomparable", "--format", "markdown"])
    md = capsys.readouterr().out.splitlines()
    assert md[0] == "<!-- memrun-compare: locomo/unknown -->" and md[1].startswith("### NON-COMPARABLE memrun compare")
    runs_block = next(i for i, ln in enumerate(md) if ln.startswith("- A = "))  # names, calls, config: no figures
    content = [ln for ln in md[1:runs_block] if ln.strip() and set(ln) - set("|-")]
    assert content and all("NON-COMPARABLE" in ln for ln in content)
    code, d = compare_json(capsys, str(ra), str(rb), "--allow-noncomparable")
    assert d["noncomparable"] is True and d["exit_code"] == code == ExitCode.REFUSAL


def test_refusal_in_json_is_a_json_document(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True] * 4)
    rb = retrieval_run(tmp_path / "b", [True] * 4, split="other")
    code, d = compare_json(capsys, str(ra), str(rb))
    assert code == ExitCode.REFUSAL and d["outcome"] == "refused" and "split" in d["reason"]


def test_same_run_twice_is_a_usage_error(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True] * 4)
    assert compare_main([str(ra), str(ra / "items.parquet")]) == ExitCode.USAGE_ERROR
    assert "are the same run" in capsys.readouterr().err


def test_categories_filter_and_few_clusters_warning(tmp_path, capsys):
    a, b = wtl(10, 30, 0)
    ra = retrieval_run(tmp_path / "a", a, comparable_categories=["1"])
    rb = retrieval_run(tmp_path / "b", b, comparable_categories=["1"])
    _, d = compare_json(capsys, str(ra), str(rb), "--categories", "comparable")
    assert list(d["per_category"]) == ["1"] and d["overall"]["n_items"] == 20
    assert d["verdict"]["reason"] == "too_few_clusters"  # two clusters never decide
    assert compare_main([str(ra), str(rb), "--categories", "9"]) == ExitCode.USAGE_ERROR
    assert "no item has category 9; present: 1, 2" in capsys.readouterr().err
    assert compare_main([str(ra), str(rb), "--gate-band", "-1"]) == ExitCode.USAGE_ERROR
    assert "--gate-band -1.0: must be >= 0 pp" in capsys.readouterr().err


def test_unknown_treatment_is_a_usage_error(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True] * 4)
    rb = retrieval_run(tmp_path / "b", [True] * 4)
    assert compare_main([str(ra), str(rb), "--treatment", "run_id"]) == ExitCode.USAGE_ERROR
    assert "not a comparability field" in capsys.readouterr().err


def test_fake_providers_refused_unless_allowed(tmp_path, capsys):
    a, b = wtl(5, 20, 1)
    ra = retrieval_run(tmp_path / "a", a, fake_providers=True)
    rb = retrieval_run(tmp_path / "b", b, fake_providers=True)
    assert compare_main([str(ra), str(rb)]) == ExitCode.REFUSAL
    assert "fake or stub providers" in capsys.readouterr().err
    assert compare_main([str(ra), str(rb), "--allow-fake"]) != ExitCode.REFUSAL


def test_a_metric_an_arm_could_not_measure_says_so_and_what_to_compare(tmp_path, capsys, monkeypatch):
    from memrun.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    for top_k, name in ((10, "a"), (1, "b")):  # the synthetic benchmark, in-process
        assert cli_main([f"arm.top_k={top_k}", "progress=false", f"hydra.run.dir={tmp_path / name}"]) == 0
    capsys.readouterr()
    # the depths differ where recall@5 reads: refused, naming the depth and a cut-off both reach
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "recall@5"]) == 3
    err = capsys.readouterr().err
    assert "top_k: A=10 B=1" in err and "K <= 1" in err
    # named as the treatment, it still cannot be measured at 5; mrr is no remedy across depths
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "recall@5", "--treatment", "top_k"]) == 4
    err = capsys.readouterr().err
    assert "recall@5 is not measured with B's arm.top_k=1 (fewer than 5 hits)" in err
    assert "--metric recall@1, or run again" in err and "arm.top_k=5 or more" in err
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "recall@1"]) in (0, 1, 2)


def test_without_metric_two_shallow_runs_compare_on_a_cutoff_they_measured(tmp_path, capsys, monkeypatch):
    """arm.top_k=3 with the default ks [1, 3, 5, 10]: recall@5 is null in every row, so it is
    not the run's headline (its summary's intervals) nor compare's default metric; text,
    --format json and the view's compare page all read the same measured one."""
    import json

    from memrun.cli import main as cli_main
    from memrun.report.html.compare_page import compare_context

    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        assert cli_main(["arm.top_k=3", "progress=false", f"hydra.run.dir={tmp_path / name}"]) == 0
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["intervals"]["metric"] == "recall@1" and summary["intervals"]["overall_all"] is not None
    capsys.readouterr()
    assert compare_main([a, b]) in (0, 1, 2)
    assert "| metric recall@1 |" in capsys.readouterr().out
    code, doc = compare_json(capsys, a, b)
    assert code in (0, 1, 2) and doc["metric"] == "recall@1"
    page = compare_context(a, b)
    assert page["banner"]["outcome"] != "refused" and any("| metric recall@1 |" in line for line in page["lines"])


def test_calls_to_different_endpoints_are_named_in_a_warning(tmp_path, capsys):
    labels = {f"i{i:02d}": ["correct" if i % 3 else "wrong"] for i in range(40)}
    here = {"reader": "http://127.0.0.1:8000/v1", "judge": "https://api.openai.com/v1"}
    a = accuracy_run(tmp_path / "a", labels, llm_endpoints=here)
    b = accuracy_run(tmp_path / "b", labels, llm_endpoints={**here, "reader": "https://api.openai.com/v1"})
    code, doc = compare_json(capsys, str(a), str(b))
    assert code != ExitCode.REFUSAL  # recorded and said, not refused: a gateway may serve the same model
    said = [w for w in doc["warnings"] if "endpoints" in w]
    assert len(said) == 1 and "reader" in said[0] and "127.0.0.1:8000" in said[0], doc["warnings"]
    same = accuracy_run(tmp_path / "c", labels, llm_endpoints=here)
    _, doc = compare_json(capsys, str(a), str(same))
    assert not [w for w in doc["warnings"] if "endpoints" in w]


def test_deterministic_under_seed_and_seed_matters(tmp_path, capsys):
    a, b = wtl(9, 40, 4)
    ra, rb = retrieval_run(tmp_path / "a", a, own_clusters(53)), retrieval_run(tmp_path / "b", b, own_clusters(53))
    _, d1 = compare_json(capsys, str(ra), str(rb), "--cluster-by", "none")
    _, d2 = compare_json(capsys, str(ra), str(rb), "--cluster-by", "none")
    assert d1["overall"] == d2["overall"]
    # with the fewest resamples allowed, another seed moves the bootstrap's p value (the
    # percentiles of these 1/53 steps land on one step at 1,000 resamples)
    few = ("--cluster-by", "none", "--resamples", "1000")
    ps = {compare_json(capsys, str(ra), str(rb), *few, "--seed", str(s))[1]["overall"]["p_value"] for s in range(6)}
    assert len(ps) > 1


def test_errors_unscored_and_one_sided_items(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True, False, None, True, True], errors={3: "timeout"})
    rb = retrieval_run(tmp_path / "b", [True, True, True, False, True, True],
                       ids=["it0", "it1", "it2", "it3", "it4", "extra"])
    code, d = compare_json(capsys, str(ra), str(rb))
    assert d["excluded"] == {"error": 1, "unscored": 1}
    assert (d["only_a"], d["only_b"]) == (0, 1)
    assert d["overall"]["n_items"] == 3 and d["overall"]["wins"] == 1


def test_no_common_item_is_a_usage_error(tmp_path, capsys):
    ra = retrieval_run(tmp_path / "a", [True, False])
    rb = retrieval_run(tmp_path / "b", [True, False], ids=["x", "y"])
    assert compare_main([str(ra), str(rb)]) == ExitCode.USAGE_ERROR
    assert "no item is scored in both runs (2 only in A, 2 only in B" in capsys.readouterr().err


def test_accuracy_majority_ties_errors_and_flip_rate(tmp_path, capsys):
    a = accuracy_run(tmp_path / "a", {
        "i1": ["correct", "correct", "wrong"],   # correct, unstable
        "i2": ["correct", "wrong", "error"],      # tie among non-errors -> wrong
        "i3": ["error", "error", "error"],        # error: excluded from both arms
        "i4": ["wrong", "wrong", "wrong"],
        "i5": ["abstain", "abstain", "correct"],  # abstain: 0 under correct+wrong+abstained
    })
    b = accuracy_run(tmp_path / "b", {
        "i1": ["correct"] * 3, "i2": ["correct"] * 3, "i3": ["correct"] * 3, "i4": ["wrong"] * 3, "i5": ["correct"] * 3,
    })
    code, d = compare_json(capsys, str(a), str(b), "--cluster-by", "none")
    o = d["overall"]
    assert d["excluded"] == {"error": 1} and o["n_items"] == 4
    assert (o["wins"], o["ties"], o["losses"]) == (2, 2, 0)  # i2 and i5 flip to B
    assert o["a_mean"] == 0.25 and o["b_mean"] == 0.75
    assert d["flip_rate_a"] == pytest.approx(3 / 4) and d["flip_rate_b"] == 0.0  # i1, i2, i5 disagree
    assert d["n_unstable"] == 3 and d["stable_only"]["n_items"] == 1
    assert d["mcnemar"]["b01"] == 2 and d["mcnemar"]["b10"] == 0
    assert d["wilcoxon"] is not None or d["wilcoxon_skipped"]
    assert d["denominator"] == DENOMINATOR_ABSTAIN_WRONG


def test_accuracy_abstentions_left_out_under_correct_plus_wrong(tmp_path, capsys):
    labels = {"i1": ["abstain"], "i2": ["correct"], "i3": ["wrong"]}
    a = accuracy_run(tmp_path / "a", labels, denominator=DENOMINATOR_EXCLUDE_ABSTAIN)
    b = accuracy_run(tmp_path / "b", {**labels, "i3": ["correct"]}, denominator=DENOMINATOR_EXCLUDE_ABSTAIN)
    _, d = compare_json(capsys, str(a), str(b), "--cluster-by", "none")
    assert d["excluded"] == {"abstain": 1} and d["overall"]["n_items"] == 2


def test_mrr_metric_and_formats_carry_the_same_numbers(tmp_path, capsys):
    a, b = wtl(12, 30, 3)
    ra, rb = retrieval_run(tmp_path / "a", a), retrieval_run(tmp_path / "b", b)
    _, d = compare_json(capsys, str(ra), str(rb), "--metric", "mrr")
    compare_main([str(ra), str(rb), "--metric", "mrr"])
    text = capsys.readouterr().out
    compare_main([str(ra), str(rb), "--metric", "mrr", "--format", "markdown"])
    md = capsys.readouterr().out
    o = d["overall"]
    needle = f"{o['delta']:+.3f} [{o['low']:+.3f}, {o['high']:+.3f}]"  # MRR is a 0-1 score, never a %
    md_needle = needle.replace("[", "\\[").replace("]", "\\]")  # markdown escapes the brackets (memrun.report.md)
    assert needle in text and md_needle in md and "| 1 odd |" in md
    assert d["metric"] == "mrr" and d["unit"] == "score" and " pp" not in text.split("B - A:")[1].split("|")[0]
    assert f"A {o['a_mean']:.3f} B {o['b_mean']:.3f}" in text and "%" not in text.split("| A ")[1].split("\n")[0]
    assert compare_main([str(ra), str(rb), "--metric", "recall@10"]) == ExitCode.USAGE_ERROR
    assert "no column hit_at_10" in capsys.readouterr().err


def test_judge_calibration_divides_by_j(tmp_path, capsys):
    a, b = wtl(40, 440, 20)
    label = {True: ["correct"], False: ["wrong"]}
    ra = accuracy_run(tmp_path / "a", {f"i{i}": label[x] for i, x in enumerate(a)}, cluster_of=lambda item: item)
    rb = accuracy_run(tmp_path / "b", {f"i{i}": label[x] for i, x in enumerate(b)}, cluster_of=lambda item: item)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"tpr": 0.9, "fpr": 0.1, "n_pos": 400, "n_neg": 400}))
    _, d = compare_json(capsys, str(ra), str(rb), "--cluster-by", "none", "--judge-calibration", str(cal))
    assert d["calibrated"]["mean"] == pytest.approx(d["overall"]["delta"] / 0.8)
    assert d["calibrated"]["high"] - d["calibrated"]["low"] > (d["overall"]["high"] - d["overall"]["low"]) / 0.8
    cal.write_text(json.dumps({"tpr": 0.5, "fpr": 0.6, "n_pos": 10, "n_neg": 10}))
    _, d = compare_json(capsys, str(ra), str(rb), "--cluster-by", "none", "--judge-calibration", str(cal))
    assert d["calibrated"]["corrected"] is False and any("carries no information" in w for w in d["warnings"])
    cal.write_text("{broken")
    assert compare_main([str(ra), str(rb), "--judge-calibration", str(cal)]) == ExitCode.USAGE_ERROR


def test_null_band(tmp_path, capsys):
    a, b = wtl(5, 50, 5)
    ra, rb = retrieval_run(tmp_path / "a", a, own_clusters(60)), retrieval_run(tmp_path / "b", b, own_clusters(60))
    assert null_band_main([str(ra), str(rb), "--cluster-by", "none"]) == 0
    out = capsys.readouterr().out
    assert "null band (the interval's wider side): 10.0 pp" in out
    assert "memrun compare A B --gate-band 10.0" in out
    # two interrupted runs still measure noise over the rows they wrote (compare holds its verdict on them)
    ra, rb = (retrieval_run(tmp_path / f"{name}_stopped", hits, own_clusters(60), status="interrupted")
              for name, hits in (("a", a), ("b", b)))
    assert null_band_main([str(ra), str(rb), "--cluster-by", "none"]) == 0
    assert "null band (the interval's wider side): 10.0 pp" in capsys.readouterr().out


def test_null_band_reads_the_runs_headline_and_names_no_metric_nobody_gave(tmp_path, capsys):
    # its --metric defaulted to recall@5 where compare's is unset: at ks without 5 it refused
    # ("no column hit_at_5"), and on the accuracy axis it warned "--metric recall@5 is not read"
    rng = np.random.default_rng(3)
    labels = [{f"{c:02d}-{i}": [rng.choice(["correct", "wrong"])] for c in range(30) for i in range(4)} for _ in range(2)]
    a, b = accuracy_run(tmp_path / "a", labels[0]), accuracy_run(tmp_path / "b", labels[1])
    assert null_band_main([str(a), str(b)]) == 0
    assert "--metric" not in capsys.readouterr().err


@pytest.mark.parametrize("resamples", ["3", "999"])
def test_too_few_resamples_for_a_95_percent_interval_are_refused(tmp_path, capsys, resamples):
    # --resamples 3 printed the interval [+1.0, +1.1] pp: its 2.5% tails were single draws
    a, b = wtl(9, 40, 4)
    ra, rb = retrieval_run(tmp_path / "a", a, own_clusters(53)), retrieval_run(tmp_path / "b", b, own_clusters(53))
    assert compare_main([str(ra), str(rb), "--resamples", resamples]) == ExitCode.USAGE_ERROR
    assert f"--resamples {resamples}: must be at least 1,000" in capsys.readouterr().err


def test_an_empty_cluster_column_is_refused_not_read_as_no_clusters(tmp_path, capsys):
    # --cluster-by= resampled items alone on runs whose items share histories, past --cluster-by none's refusal
    ra, rb = retrieval_run(tmp_path / "a", [True, False] * 8), retrieval_run(tmp_path / "b", [False, True] * 8)
    assert compare_main([str(ra), str(rb), "--cluster-by="]) == ExitCode.USAGE_ERROR
    assert "(--cluster-by) is empty; name a column, or none" in capsys.readouterr().err


def test_categories_may_be_named_by_their_labels(tmp_path, capsys, monkeypatch):
    # --categories multi-hop on LoCoMo said "no item has category multi-hop; present: 1, 2, 3, 4, 5"
    import run_tables

    base = run_tables.base_instrument
    monkeypatch.setattr(run_tables, "base_instrument", lambda **kw: base(categories={"1": "odd", "2": "even"}, **kw))
    a, b = [True, False] * 8, [False, True] * 8
    ra, rb = retrieval_run(tmp_path / "a", a), retrieval_run(tmp_path / "b", b)
    _, by_raw = compare_json(capsys, str(ra), str(rb), "--categories", "1")
    _, by_label = compare_json(capsys, str(ra), str(rb), "--categories", "odd")
    assert by_label["overall"] == by_raw["overall"] and by_label["overall"]["n_items"] == 8


def test_b_errors_on_items_only_b_holds_count_in_its_error_share(tmp_path, capsys):
    """B's error share was read over A's items alone: a B whose 4 items beyond A's 40 all
    failed printed 'B 0/40 (0.0%)' and the gate saw equal error shares; it is 4 of 44 (9.1%),
    more than --max-error-gap from A's 0%."""
    a = retrieval_run(tmp_path / "a", [i % 2 == 0 for i in range(40)], ids=[f"it{i}" for i in range(40)])
    b = retrieval_run(tmp_path / "b", [True] * 44, ids=[f"it{i}" for i in range(44)],
                      errors={i: "search: timeout" for i in range(40, 44)})
    _, d = compare_json(capsys, str(a), str(b), "--categories", "all")
    assert (d["data"]["errors_b"], d["data"]["items_b"]) == (4, 44) and (d["data"]["errors_a"], d["data"]["items_a"]) == (0, 40)
    assert d["verdict"]["reason"] == "unequal_errors"


@pytest.mark.parametrize("named", ["a,b", "spaced", " spaced "])
def test_a_category_with_a_comma_or_spaces_at_its_ends_can_be_named(tmp_path, capsys, named):
    """A benchmark file's category 'a,b' or ' spaced ' could not be named: the list was split at
    its comma and each name stripped ('no item has category a, b; present: ...')."""
    categories = ["a,b", " spaced "] * 8
    a, b = [True, False, False, True] * 4, [False, True, True, False] * 4
    ra = retrieval_run(tmp_path / "a", a, categories=categories)
    rb = retrieval_run(tmp_path / "b", b, categories=categories)
    code, d = compare_json(capsys, str(ra), str(rb), "--categories", named)
    assert code != 4 and d["overall"]["n_items"] == 8
    assert list(d["per_category"]) == ["a,b" if named == "a,b" else " spaced "]


@pytest.mark.parametrize("categories", [",", " , "])
def test_categories_naming_none_are_a_usage_error(tmp_path, capsys, categories):
    # was "memrun compare failed unexpectedly: ArrowTypeError ... (a bug in memrun)"
    ra, rb = retrieval_run(tmp_path / "a", [True, False] * 4), retrieval_run(tmp_path / "b", [False, True] * 4)
    assert compare_main([str(ra), str(rb), "--categories", categories]) == ExitCode.USAGE_ERROR
    assert f"--categories {categories!r} names no category" in capsys.readouterr().err


def test_bad_arguments_exit_with_usage_code(tmp_path, capsys):
    assert compare_main_exit(["only-one"]) == ExitCode.USAGE_ERROR
    assert compare_main([str(tmp_path / "nope"), str(tmp_path / "nope")]) == ExitCode.USAGE_ERROR
    assert "no such file or folder" in capsys.readouterr().err


def compare_main_exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        compare_main(argv)
    return exc.value.code


@pytest.mark.realdata
def test_cli_on_two_real_locomo_runs(tmp_path, data_dir):
    done = run_memrun(["-m", "benchmark=locomo", "arm=bm25,bm25_nostop", "progress=false"], tmp_path,
                      {"MEMRUN_DATA_DIR": str(data_dir)})
    assert done.returncode == 0, done.stderr
    a, b = run_dirs(tmp_path / "outputs")
    stopwords = ["--treatment", "lexical_scoring"]  # bm25_nostop is bm25 without its stopwords: name the change
    done = run_memrun(["compare", str(a), str(b), *stopwords, "--format", "json", "--categories", "all"], tmp_path)
    assert done.returncode in (ExitCode.PASS, ExitCode.FAIL, ExitCode.UNRESOLVED), done.stderr
    d = json.loads(done.stdout)
    assert d["verdict"]["exit_code"] == done.returncode
    o = d["overall"]
    assert o["n_items"] == 1982 and o["n_clusters"] == 10 and d["excluded"] == {"unscored": 4}
    # 10 conversations are few clusters: the CR2 interval is computed (unequal conversations:
    # fewer Bell-McCaffrey df than 9); the gate reads the union of the bootstrap's interval and
    # the design-calibrated t interval, which contains the CR2 one
    assert 8 < o["small_clusters"]["df"] < 9
    assert o["low"] == pytest.approx(min(o["bootstrap"]["low"], o["t_low"]))
    assert o["high"] == pytest.approx(max(o["bootstrap"]["high"], o["t_high"]))
    assert o["t_low"] <= o["small_clusters"]["low"] + 1e-12 and o["t_high"] >= o["small_clusters"]["high"] - 1e-12
    assert o["wins"] + o["ties"] + o["losses"] == 1982 and o["wins"] != o["losses"]
    assert list(d["per_category"]) == ["1", "2", "3", "4", "5"]
    assert d["per_category"]["2"]["label"] == "temporal"
    text = run_memrun(["compare", str(a), str(b), *stopwords, "--categories", "all"], tmp_path)
    assert text.returncode == done.returncode and f"wins {o['wins']} ties {o['ties']} losses {o['losses']}" in text.stdout
    # without --categories, compare reads the runs' headline subset (LoCoMo 1-4), as their summaries do
    headline = json.loads(run_memrun(["compare", str(a), str(b), *stopwords, "--format", "json"], tmp_path).stdout)
    assert headline["overall"]["n_items"] == json.loads((b / "summary.json").read_text())["overall_comparable"]["n_scored"]


def test_runs_that_share_no_item_are_told_so_not_offered_a_treatment(tmp_path, capsys):
    """LoCoMo against a synthetic run: naming the benchmark as the treatment can never pair
    them, and B's items outside A's headline categories are counted, not called 0."""
    ra = retrieval_run(tmp_path / "a", [True, False] * 10, comparable_categories=["1"])
    rb = retrieval_run(tmp_path / "b", [True] * 30, ids=[f"x{i}" for i in range(30)], categories=["x"] * 30,
                       benchmark="synthetic")
    assert compare_main([str(ra), str(rb)]) == ExitCode.REFUSAL
    err = capsys.readouterr().err
    assert "  benchmark: A='locomo' B='synthetic'" in err
    assert "the runs share no item (A: 20 items, B: 30, none of them A's): no --treatment pairs them" in err
    assert "--treatment benchmark" not in err
    assert compare_main([str(ra), str(rb), "--treatment", "benchmark"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "(10 only in A, 0 only in B of categories 1; 30 more of B's in no category read, 0 excluded)" in err
