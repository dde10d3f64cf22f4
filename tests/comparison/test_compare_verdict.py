"""Issue 20: a verdict that holds its error rate, on hand-built run tables (verdict and exit code)."""

import numpy as np
import pytest

from memrun.stats import ExitCode
from tests.run_tables import compare_json, retrieval_run, wtl


def _runs(tmp_path, a, b, clusters, **kw):
    return (str(retrieval_run(tmp_path / "a", a, clusters, **kw)), str(retrieval_run(tmp_path / "b", b, clusters, **kw)))


def test_agreeing_clusters_are_never_narrower_than_the_items_noise(tmp_path, capsys):
    """Three clusters whose mean deltas coincide (+12 pp each) have CR2 variance 0: issue 20's
    gate printed PASS +12.0 pp [+12.0, +12.0], issue 33's found PASS on +-1.5 pp beside an
    item-level SE of ~1.9 pp. The t interval's SE is never below the items' own
    (sd / sqrt(n), numpy here), so the interval is at least as wide as the independent
    items' t interval."""
    a, b = [], []
    for _ in range(3):  # each cluster: 6 wins, 44 ties of 50 items
        wa, wb = wtl(6, 44, 0)
        a += wa
        b += wb
    clusters = [f"c{i // 50}" for i in range(150)]
    code, d = compare_json(capsys, *_runs(tmp_path, a, b, clusters))
    delta = np.array(b, float) - np.array(a, float)
    se_items = delta.std(ddof=1) / np.sqrt(len(delta))
    o = d["overall"]
    assert o["small_clusters"]["se"] == pytest.approx(0, abs=1e-12)  # CR2 alone says no uncertainty at all
    assert o["se"] == pytest.approx(se_items)
    assert o["interval"] == "calibrated_t" and o["t_low"] <= 0.12 - o["design_check"]["nominal_crit"] * se_items
    assert o["high"] - o["low"] >= 2 * 1.96 * se_items
    assert code == (ExitCode.PASS if o["low"] > 0 else ExitCode.UNRESOLVED)


def test_unequal_clusters_use_bell_mccaffrey_df(tmp_path, capsys):
    """One cluster of 500 items and nine of 5: the old CR2 interval on t(G-1) = t(9) passed
    (lower bound +0.4 pp); the corrected degrees of freedom (1.17) make it honest:
    unresolved."""
    a, b = wtl(51, 449, 0)  # the big cluster: B better by 10.2 pp
    clusters = ["big"] * 500
    for g, wins in enumerate([3, 3, 1, 1, 0, 0, 0, 1, 4]):
        wa, wb = wtl(wins, 5 - wins, 0)
        a += wa
        b += wb
        clusters += [f"small{g}"] * 5
    code, d = compare_json(capsys, *_runs(tmp_path, a, b, clusters))
    small = d["overall"]["small_clusters"]
    assert small["df"] == pytest.approx(1.165, abs=0.01)
    assert small["mean"] - 2.262 * small["se"] > 0  # what t(9) said
    assert d["overall"]["interval"] == "calibrated_t" and d["overall"]["low"] < 0
    assert d["overall"]["design_check"]["crit_up"] >= d["overall"]["design_check"]["nominal_crit"]
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "underpowered"


def test_two_clusters_are_too_few(tmp_path, capsys):
    a, b = wtl(30, 170, 0)
    code, d = compare_json(capsys, *_runs(tmp_path, a, b, [f"c{i % 2}" for i in range(200)]))
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "too_few_clusters"
    assert "at least 3" in d["verdict"]["detail"]


def test_an_arm_with_most_items_errored_is_unresolved(tmp_path, capsys):
    """30 of 40 items errored in B: the 10 left used to PASS with no warning."""
    a = [i % 10 == 0 for i in range(40)]
    b = [True] * 40
    clusters = [f"c{i % 8}" for i in range(40)]
    ra = str(retrieval_run(tmp_path / "a", a, clusters))
    rb = str(retrieval_run(tmp_path / "b", b, clusters, errors={i: "timeout" for i in range(30)}))
    code, d = compare_json(capsys, ra, rb)
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "too_many_errors"
    assert "30 of 40 items errored in B (75%)" in d["verdict"]["detail"]
    code, d = compare_json(capsys, ra, rb, "--max-error-share", "0.8", "--max-error-gap", "0.8")
    assert code == ExitCode.PASS  # thresholds are the user's to set


def test_unequal_error_shares_are_unresolved(tmp_path, capsys):
    a, b = wtl(30, 170, 0)
    clusters = [f"c{i % 8}" for i in range(200)]
    ra = str(retrieval_run(tmp_path / "a", a, clusters))
    rb = str(retrieval_run(tmp_path / "b", b, clusters, errors={i: "timeout" for i in range(100, 116)}))
    code, d = compare_json(capsys, ra, rb)
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "unequal_errors"
    assert d["data"]["error_share_b"] == pytest.approx(0.08)


def test_runs_sharing_half_their_items_are_unresolved(tmp_path, capsys, monkeypatch):
    a, b = wtl(40, 160, 0)
    clusters = [f"c{i % 8}" for i in range(200)]
    ra = str(retrieval_run(tmp_path / "a", a[:150], clusters[:150], ids=[f"it{i}" for i in range(150)]))
    rb = str(retrieval_run(tmp_path / "b", b[50:], clusters[50:], ids=[f"it{i}" for i in range(50, 200)]))
    code, d = compare_json(capsys, ra, rb)
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "too_few_paired"
    assert d["data"]["paired_share"] == pytest.approx(0.5)
    gate = tmp_path / "g.yaml"
    gate.write_text("min-paired-share: 0.4\n")
    code, d = compare_json(capsys, ra, rb, "--gate", str(gate))
    assert d["verdict"]["reason"] != "too_few_paired" and d["settings"]["thresholds"]["min_paired_share"] == 0.4


def test_repeats_are_part_of_the_instrument(tmp_path, capsys):
    """A with repeats=3 and B with repeats=1 used to FAIL (or PASS when swapped) with no
    word: a majority of three labels is right more often than one."""
    from tests.run_tables import accuracy_run

    items = [f"c{g}-{i}" for g in range(5) for i in range(10)]
    ra = str(accuracy_run(tmp_path / "a", {it: ["correct", "correct", "wrong"] for it in items}, repeats=3))
    rb = str(accuracy_run(tmp_path / "b", {it: ["correct"] if i % 4 else ["wrong"] for i, it in enumerate(items)},
                          repeats=1))
    code, d = compare_json(capsys, ra, rb)
    assert code == ExitCode.REFUSAL and "repeats: A=3 B=1" in d["reason"] and "--treatment repeats" in d["reason"]
    code, d = compare_json(capsys, ra, rb, "--treatment", "repeats")
    assert code != ExitCode.REFUSAL and d["settings"]["treatments"] == ["repeats"]


def test_wilcoxon_reads_the_gates_majority_labels_per_cluster(tmp_path, capsys):
    """B's majority label is right on every item of 4 of 5 clusters (2 of 3 repeats right),
    A's on none (1 of 3): the gate reads +80 pp; the old Wilcoxon read per-repeat means."""
    from tests.run_tables import accuracy_run

    items = [f"c{g}-{i}" for g in range(5) for i in range(6)]
    ra = str(accuracy_run(tmp_path / "a", {it: ["correct", "wrong", "wrong"] for it in items}, repeats=3))
    rb = str(accuracy_run(tmp_path / "b", {it: ["correct", "correct", "wrong"] if not it.startswith("c4")
                                           else ["correct", "wrong", "wrong"] for it in items}, repeats=3))
    code, d = compare_json(capsys, ra, rb)
    w = d["wilcoxon"]
    assert w["unit"] == "cluster" and w["mean_delta"] == pytest.approx(0.8)
    assert w["min_p"] == pytest.approx(2 / 16)  # four non-tied clusters
    assert d["mcnemar"]["method"] == "durkalski" and d["mcnemar"]["n_clusters"] == 5


def test_judge_widening_uses_the_deciding_intervals_critical_value(tmp_path, capsys):
    import json

    from scipy.stats import t as student

    from tests.run_tables import accuracy_run

    items = [f"c{g}-{i}" for g in range(6) for i in range(20)]
    ra = str(accuracy_run(tmp_path / "a", {it: ["correct" if int(it[-1]) % 2 else "wrong"] for it in items}))
    rb = str(accuracy_run(tmp_path / "b", {it: ["correct" if int(it[-1]) % 2 or (it[1] in "024" and
                                                 it.endswith("4")) else "wrong"] for it in items}))
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"tpr": 0.9, "fpr": 0.1, "n_pos": 100, "n_neg": 100}))
    code, d = compare_json(capsys, ra, rb, "--judge-calibration", str(cal))
    o, c = d["overall"], d["calibrated"]
    assert o["interval"] == "calibrated_t"
    crit = o["design_check"]["crit_up"]  # the deciding interval's critical value, calibrated on the design
    assert crit >= student.ppf(0.975, o["small_clusters"]["df"]) == pytest.approx(o["design_check"]["nominal_crit"])
    j, j_se = 0.8, (0.9 * 0.1 / 100 + 0.1 * 0.9 / 100) ** 0.5
    half = (((o["delta"] - o["low"]) / j) ** 2 + (crit * abs(o["delta"]) * j_se / j**2) ** 2) ** 0.5
    assert o["delta"] - o["low"] == pytest.approx(crit * o["se"])
    assert c["low"] == pytest.approx(o["delta"] / j - half)


def test_a_pass_above_zero_prints_above_zero(tmp_path, capsys):
    """A lower bound of +0.03 pp used to print as +0.0, which reads as "not a pass"."""
    from memrun.report.compare_report import bound_digits

    assert bound_digits([0.0000025, 0.02], 0.0, 1, 100.0) == 4
    assert bound_digits([0.012, 0.02], 0.0, 1, 100.0) == 1
    assert bound_digits([-0.0003, 0.001], -0.0003, 1, 100.0) == 1  # a bound equal to the threshold is fine


def test_compare_reads_the_runs_headline_subset_by_default(tmp_path, capsys):
    from memrun.commands.compare import main as compare_main

    a, b = wtl(40, 160, 0)
    clusters = [f"c{i % 8}" for i in range(200)]
    ra, rb = _runs(tmp_path, a, b, clusters, comparable_categories=["1"])
    _, d = compare_json(capsys, ra, rb)
    assert d["overall"]["n_items"] == 100 and d["categories"]["read"] == ["1"]
    _, d = compare_json(capsys, ra, rb, "--categories", "all")
    assert d["overall"]["n_items"] == 200 and d["categories"]["read"] == ["1", "2"]
    compare_main([ra, rb])
    assert "categories read: 1 (the run's headline subset; --categories all reads every category)" \
        in capsys.readouterr().out


def test_an_unknown_metric_is_one_error_on_both_axes(tmp_path, capsys):
    from memrun.commands.compare import main as compare_main
    from tests.run_tables import accuracy_run

    a, b = wtl(4, 20, 1)
    recall = _runs(tmp_path / "r", a, b, [f"c{i % 5}" for i in range(25)])
    items = {f"c{g}-{i}": ["correct"] for g in range(5) for i in range(5)}
    accuracy = (str(accuracy_run(tmp_path / "aa", items)), str(accuracy_run(tmp_path / "ab", items)))
    for ra, rb in (recall, accuracy):
        assert compare_main([ra, rb, "--metric", "bogus@5"]) == ExitCode.USAGE_ERROR
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("memrun: error: --metric bogus@5: unknown retrieval metric")


def test_an_unresolved_verdict_reports_its_minimum_detectable_effect(tmp_path, capsys):
    from memrun.commands.compare import main as compare_main

    a, b = wtl(12, 180, 8)
    clusters = [f"c{i % 10}" for i in range(200)]
    ra, rb = _runs(tmp_path, a, b, clusters)
    code, d = compare_json(capsys, ra, rb, "--effect", "2")
    p = d["power"]
    assert code == ExitCode.UNRESOLVED and p["units"] == "clusters" and p["n_units"] == 10
    se = (d["overall"]["high"] - d["overall"]["low"]) / (2 * p["crit"])
    assert p["se"] == pytest.approx(se) and p["mde"] > p["crit"] * se and p["effect"] == pytest.approx(0.02)
    assert p["needed"] == pytest.approx(10 * (p["mde"] / 0.02) ** 2, abs=1)
    compare_main([ra, rb, "--effect", "2"])
    assert "power: minimum detectable effect at 80% power" in capsys.readouterr().out


def _lme_runs(tmp_path, shared_effect: bool):
    """120 questions of 3 types, item clusters stratified by type; groups of 5 share one
    evidence session and, when ``shared_effect``, B wins whole groups."""
    n = 120
    group = [f"s{(i // 3) // 5}-{i % 3}" for i in range(n)]  # 5 questions of one type per session
    a = [False] * n
    b = [(int(g.split("-")[0][1:]) % 3 == 0) if shared_effect else (i % 7 == 0) for i, g in enumerate(group)]
    return _runs(tmp_path, a, b, [f"q{i}" for i in range(n)], **_lme_kw(task_averaged=True))


def _lme_kw(**over):
    """_lme_runs's run fields (``over`` replaces some)."""
    n = 120
    kw = dict(categories=[f"t{i % 3}" for i in range(n)],
              gold_sessions=[[f"s{(i // 3) // 5}-{i % 3}"] for i in range(n)], stratify_by="category",
              ids=[f"q{i}" for i in range(n)])
    return {**kw, **over}


def test_longmemeval_evidence_clusters_and_what_the_interval_means(tmp_path, capsys):
    ra, rb = _lme_runs(tmp_path, True)
    code, d = compare_json(capsys, ra, rb)
    o = d["overall"]
    assert o["clustering"] == "evidence" and o["n_clusters"] == 24  # the wider interval decided
    assert o["other"]["clustering"] == "given" and o["other"]["n_clusters"] == 120
    assert any("the interval holds for these questions with these category counts" in w for w in d["warnings"])
    assert d["estimands"]["verdict_reads"] == "item_weighted"
    assert any(w.startswith("sensitivity: clustered by shared evidence session (24 clusters of 120 items)")
               and "the gate reads the wider, clustered by shared evidence" in w for w in d["warnings"])
    assert any("task-averaged" in w and "the verdict reads the item-weighted mean" in w for w in d["warnings"])
    _, ev = compare_json(capsys, ra, rb, "--cluster-by", "evidence")
    assert ev["overall"]["n_clusters"] == 24  # 120 questions in groups of 5 sharing a session
    assert (ev["overall"]["low"], ev["overall"]["high"]) == (o["low"], o["high"])
    assert ev["overall"]["high"] - ev["overall"]["low"] > o["other"]["high"] - o["other"]["low"]


def _group_hits(wins: set[int], losses: set[int]) -> list[bool | None]:
    """B's hits against an A that misses everywhere except the ``losses`` groups (A hits
    there, B misses): B wins every question of the ``wins`` groups of 5."""
    group = [((i // 3) // 5) * 3 + i % 3 for i in range(120)]  # _lme_runs's 24 session groups, numbered
    return [g in wins for g in group], [g in losses for g in group]


def test_questions_sharing_evidence_do_not_pass_as_independent(tmp_path, capsys):
    """Issue 20, LongMemEval default: B wins whole evidence groups (3 of 24) and loses one.
    Read as 120 independent questions the interval is +8.3 pp [+1.x, ...] and the old gate
    said PASS (exit 0); the same deltas over 24 groups sharing evidence straddle 0: the gate
    reads the wider interval and the verdict is unresolved (exit 2)."""
    b, a_hits = _group_hits({0, 7, 14}, {20})
    runs = (str(retrieval_run(tmp_path / "a", a_hits, [f"q{i}" for i in range(120)], **_lme_kw())),
            str(retrieval_run(tmp_path / "b", b, [f"q{i}" for i in range(120)], **_lme_kw())))
    code, d = compare_json(capsys, *runs)
    o = d["overall"]
    assert o["delta"] == pytest.approx(10 / 120)
    assert o["other"]["clustering"] == "given" and o["other"]["low"] > 0  # the old gate's interval: a PASS
    assert o["clustering"] == "evidence" and o["low"] < 0 < o["high"]
    assert code == ExitCode.UNRESOLVED and d["verdict"]["low"] == o["low"]
    assert d["wilcoxon"]["unit"] == "cluster" and d["wilcoxon"]["n_units"] == 24  # the gate's unit
    from memrun.commands.compare import main as compare_main

    compare_main(list(runs))
    out = capsys.readouterr().out
    assert "clusters by shared evidence session" in out
    assert "; the wider of two clusterings (with item clusters: [+1.7" in out
    assert "has only 10 conversations" not in out  # the LoCoMo note is for LoCoMo's own clusters
    # the same deltas when no two questions share a session: independent, the item-level interval passes
    lone = {"gold_sessions": [[f"own{i}"] for i in range(120)]}
    solo = (str(retrieval_run(tmp_path / "c", a_hits, [f"q{i}" for i in range(120)], **_lme_kw(**lone))),
            str(retrieval_run(tmp_path / "d", b, [f"q{i}" for i in range(120)], **_lme_kw(**lone))))
    code, d = compare_json(capsys, *solo)
    assert code == ExitCode.PASS and d["overall"]["other"] is None and d["overall"]["clustering"] == "given"
    assert any("no two of them share a gold session here" in w for w in d["warnings"])


def test_an_unreadable_evidence_interval_holds_the_verdict(tmp_path, capsys):
    """Every question shares one session with the next (a chain): one evidence cluster.
    The item-level interval passes; one cluster of shared evidence cannot decide."""
    b, a_hits = _group_hits({0, 1, 2, 3, 4, 5}, set())
    chain = {"gold_sessions": [[f"s{i}", f"s{i + 1}"] for i in range(120)]}
    runs = (str(retrieval_run(tmp_path / "a", a_hits, [f"q{i}" for i in range(120)], **_lme_kw(**chain))),
            str(retrieval_run(tmp_path / "b", b, [f"q{i}" for i in range(120)], **_lme_kw(**chain))))
    code, d = compare_json(capsys, *runs)
    assert d["overall"]["other"]["low"] > 0  # item clusters alone would pass
    assert code == ExitCode.UNRESOLVED and d["overall"]["clustering"] == "evidence"
    assert d["verdict"]["reason"] in ("too_few_clusters", "degenerate_interval")


def test_cluster_by_the_stratum_is_refused(tmp_path, capsys):
    from memrun.commands.compare import main as compare_main

    ra, rb = _lme_runs(tmp_path, False)
    assert compare_main([ra, rb, "--cluster-by", "category"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "--cluster-by category with --stratify-by category" in err and "zero-width" in err


def test_plan_prints_the_power_of_a_pilot(tmp_path, capsys):
    from memrun.commands.plan import main as plan_main

    a, b = wtl(12, 180, 8)
    ra, rb = _runs(tmp_path, a, b, [f"c{i % 10}" for i in range(200)])
    _, d = compare_json(capsys, ra, rb, "--effect", "2")
    assert plan_main(["--pilot", ra, rb, "--effect", "2", "--format", "json"]) == 0
    import json

    plan = json.loads(capsys.readouterr().out)
    assert plan["power"]["mde"] == pytest.approx(d["power"]["mde"]) and plan["power"]["needed"] == d["power"]["needed"]
    assert plan["power"]["status"] == d["power"]["status"] and plan["power"]["power_low"] == d["power"]["power_low"]
    assert plan_main(["--pilot", ra, rb, "--effect", "2"]) == 0
    assert "power: minimum detectable effect at 80% power" in capsys.readouterr().out


def test_plan_refuses_one_pilot_run_and_says_why(tmp_path, capsys):
    """One run's scores do not show how often two arms disagree (what sets the power): one
    --pilot run is a one-line error naming what to give, not argparse's 'expected 2 arguments'."""
    from memrun.commands.plan import main as plan_main
    from memrun.errors import ConfigError

    a, b = wtl(12, 180, 8)
    ra, _ = _runs(tmp_path, a, b, [f"c{i % 10}" for i in range(200)])
    with pytest.raises(ConfigError, match="one run cannot plan a paired comparison.*Give two runs"):
        plan_main(["--pilot", ra])
    with pytest.raises(ConfigError, match="--pilot takes two runs"):
        plan_main(["--pilot", ra, ra, ra])


def test_plan_marks_pilot_runs_of_another_design(tmp_path, capsys):
    """The pilots' MDE is their design's: LoCoMo recall runs beside a plan of the synthetic
    benchmark printed it as the plan's, unmarked, exit 0."""
    import json

    from memrun.commands.plan import main as plan_main
    from memrun.errors import ConfigError

    a, b = wtl(12, 180, 8)
    ra, rb = _runs(tmp_path, a, b, [f"c{i % 10}" for i in range(200)])
    assert plan_main(["--pilot", ra, rb, "--format", "json"]) == 0  # plan: synthetic; pilots: locomo
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w.startswith(f"--pilot {ra}: benchmark locomo (the plan's: synthetic); split locomo10 (the plan's: "
                            "smoke): the power printed is that run's design, not this plan's") for w in warnings)
    with pytest.raises(ConfigError, match="benchmark=synthetic is an override, which --pilot read as a run; put the "
                                          "overrides before it"):
        plan_main(["--pilot", ra, rb, "benchmark=synthetic"])


def test_power_advice_says_locomo_has_only_ten_conversations(tmp_path, capsys):
    """LoCoMo-like runs (10 conversations, the published split): an effect that needs ~40
    clusters is said to be beyond what LoCoMo has, in compare and in plan --pilot."""
    from memrun.commands.compare import main as compare_main
    from memrun.commands.plan import main as plan_main

    a, b = wtl(12, 180, 8)
    ra, rb = _runs(tmp_path, a, b, [f"c{i % 10}" for i in range(200)])
    code, d = compare_json(capsys, ra, rb, "--effect", "2")
    p = d["power"]
    assert code == ExitCode.UNRESOLVED and p["needed"] > 10 and p["available"] == 10
    compare_main([ra, rb, "--effect", "2"])
    assert "but locomo has only 10 conversations: no comparison on it can detect this effect" in capsys.readouterr().out
    assert plan_main(["--pilot", ra, rb, "--effect", "2"]) == 0
    assert "but locomo has only 10 conversations" in capsys.readouterr().out
    # an effect within reach: no such note; another split (your own LoCoMo-format file): no cap known
    compare_main([ra, rb, "--effect", "30"])
    assert "has only 10" not in capsys.readouterr().out
    rc, rd = (str(retrieval_run(tmp_path / s, x, [f"c{i % 10}" for i in range(200)], split="mine"))
              for s, x in (("c", a), ("d", b)))
    _, d = compare_json(capsys, rc, rd, "--effect", "2")
    assert "available" not in d["power"]


def test_cluster_by_evidence_is_refused_where_items_share_a_history(tmp_path, capsys):
    """LoCoMo-like runs: ten conversations, each of whose questions names sessions of its own
    conversation (``session_2`` exists in every one). Joining questions through those ids
    would merge conversations; the derived key is refused with the reason."""
    from memrun.commands.compare import main as compare_main

    n = 200
    clusters = [f"conv-{i % 10}" for i in range(n)]
    a, b = wtl(20, 160, 20)
    ra, rb = _runs(tmp_path, a, b, clusters, gold_sessions=[[f"session_{i % 3}"] for i in range(n)])
    assert compare_main([ra, rb, "--cluster-by", "evidence"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "--cluster-by evidence: items share histories here (20 items in one cluster)" in err


def test_the_default_headline_subset_reads_the_categories_a_slice_holds(tmp_path, capsys):
    """A slice holding categories 1-3 of a benchmark whose headline subset is 1-4: compare
    without --categories reads 1-3 and says 4 is absent (it used to stop: no item has category 4)."""
    n = 120
    a, b = wtl(10, 100, 10)
    kw = dict(categories=[str(1 + i % 3) for i in range(n)], comparable_categories=["1", "2", "3", "4"])
    code, d = compare_json(capsys, *_runs(tmp_path, a, b, [f"c{i % 10}" for i in range(n)], **kw))
    assert code != ExitCode.USAGE_ERROR, d
    assert d["overall"]["n_items"] == n and d["categories"]["read"] == ["1", "2", "3"]
    assert "no item of 4 in this run" in d["categories"]["chosen"]


def test_the_verdict_says_what_it_assumes_and_what_the_design_check_found(tmp_path, capsys):
    """Text and JSON carry the assumptions line and the design check's simulated false-pass
    rate with its method, replications and seed; errors on one side are bounded, not dropped:
    B errored on 8 items A got right, which dropping would have turned into a PASS."""
    from memrun.commands.compare import main as compare_main

    a, b = wtl(20, 160, 12)  # 192 paired items: B +4.2 pp over them
    a += [True] * 8
    b += [False] * 8  # the 8 items B errors on: A right there
    clusters = [f"c{i % 10}" for i in range(200)]
    ra, _ = _runs(tmp_path, a, b, clusters)
    rb = str(retrieval_run(tmp_path / "b2", b, clusters, errors={i: "timeout" for i in range(192, 200)}))
    code, d = compare_json(capsys, ra, rb, "--max-error-gap", "0.1", "--seed", "11")
    check = d["overall"]["design_check"]
    assert check["method"] == "design_calibrated_t" and check["seed"] == 11 and check["replications"] >= 2000
    assert d["assumptions"].startswith("assumes: the 10 clusters are independent draws")
    bound = d["overall"]["error_bound"]
    assert bound["k_b"] == 8 and bound["worst"] == -8.0
    n = d["overall"]["n_items"]
    assert d["verdict"]["low"] == pytest.approx((n * d["overall"]["paired_low"] - 8) / (n + 8))
    assert code != ExitCode.PASS or d["verdict"]["low"] > 0
    compare_main([ra, rb, "--max-error-gap", "0.1"])
    out = capsys.readouterr().out
    assert "assumes: the 10 clusters" in out and "design check (design_calibrated_t" in out
    assert "errored in one arm only (A 0, B 8)" in out


@pytest.mark.parametrize("how", [dict(status="interrupted"), dict(status="stopped"),
                                 dict(status="partial", shard={"count": 3, "missing": [2], "merged": [0, 1]}),
                                 dict(shard={"count": 3, "index": 0})])
def test_runs_that_are_not_whole_never_pass(tmp_path, capsys, how):
    """Two runs stopped alike (two merges missing the same shard, two runs interrupted or out of
    budget at the same item, shard 0 of each arm) pair fully, so no paired share caught them:
    compare PASSed, exit 0, on the part of the benchmark that happened to run, with a warning.
    The verdict is held (the numbers still shown); a whole run against it is held too."""
    a, b = wtl(60, 140, 0)
    clusters = [f"c{i % 8}" for i in range(200)]
    ra, rb = _runs(tmp_path, a, b, clusters, **how)
    code, d = compare_json(capsys, ra, rb)
    assert code == ExitCode.UNRESOLVED and d["verdict"]["reason"] == "unfinished_run"
    assert d["verdict"]["detail"].startswith("runs A and B are not whole")
    assert d["overall"]["low"] > 0  # the numbers alone would pass
    whole = str(retrieval_run(tmp_path / "whole", a, clusters))
    code, d = compare_json(capsys, whole, rb)
    assert code == ExitCode.UNRESOLVED and d["verdict"]["detail"].startswith("run B is not whole")
    code, d = compare_json(capsys, whole, str(retrieval_run(tmp_path / "whole_b", b, clusters, status="degraded")))
    assert code == ExitCode.PASS  # a degraded run is whole: its errors are what --max-error-share weighs


def test_a_table_holding_an_item_repeat_twice_is_refused(tmp_path, capsys):
    """A table joining two runs' rows by hand (read outside a run folder, as docs allow for
    columns of one's own) held ('i0', 2) twice: compare read the copy as a fourth repeat, and
    i0's labels correct, correct, wrong became a 2-2 tie, i.e. wrong, with no word."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.run_tables import accuracy_run

    labels = {f"c{i % 5}i{i}": ["correct", "correct", "wrong"] for i in range(40)}
    a = accuracy_run(tmp_path / "a", labels)
    b = accuracy_run(tmp_path / "b", labels)
    table = pq.read_table(b / "items.parquet")
    pq.write_table(pa.concat_tables([table, table.slice(2, 1)]).replace_schema_metadata(table.schema.metadata),
                   b / "items.parquet")
    code, d = compare_json(capsys, str(a), str(b))
    assert code == ExitCode.USAGE_ERROR
    assert "1 (item_id, repeat) pair(s) occur on more than one row, first ('c0i0', 2)" in d["error"]
