"""A new user's trial of memrun compare: --cluster-by none where items share a history,
--metric on the accuracy axis, and the two discordance figures."""

from __future__ import annotations

from memrun.commands.compare import main as compare_main
from memrun.stats import ExitCode
from tests.run_tables import accuracy_run, compare_cli, retrieval_run, wtl


def test_cluster_by_none_is_refused_where_items_share_a_history_and_never_suggested(tmp_path, capsys):
    """150 of 151 items from one conversation passed with --cluster-by none (exit 0), and
    the two-cluster verdict suggested it."""
    a, b = wtl(30, 121, 0)
    clusters = ["conv-26"] * 150 + ["conv-30"]
    ra, rb = (str(retrieval_run(tmp_path / n, hits, clusters)) for n, hits in (("a", a), ("b", b)))
    code, out, err = compare_cli(capsys, ra, rb)
    assert code == ExitCode.UNRESOLVED and "--cluster-by none" not in out + err
    code, out, err = compare_cli(capsys, ra, rb, "--cluster-by", "none")
    assert code == ExitCode.USAGE_ERROR and not out
    assert "--cluster-by none: items share histories here (150 items in one cluster)" in err
    own = [str(retrieval_run(tmp_path / f"own{n}", hits, [f"q{i}" for i in range(151)])) for n, hits in ((0, a), (1, b))]
    assert compare_cli(capsys, *own, "--cluster-by", "none")[0] == ExitCode.PASS  # one history a question: allowed


def test_a_metric_on_the_accuracy_axis_says_the_majority_label_decides(tmp_path, capsys):
    items = {f"c{g}-{i}": ["correct" if (g + i) % 3 else "wrong"] for g in range(5) for i in range(6)}
    ra, rb = str(accuracy_run(tmp_path / "a", items)), str(accuracy_run(tmp_path / "b", items))
    _, out, err = compare_cli(capsys, ra, rb, "--metric", "recall@5")
    said = [line for line in (out + err).splitlines() if "--metric recall@5 is not read on the accuracy axis" in line]
    assert said and "majority label" in said[0]
    _, out, err = compare_cli(capsys, ra, rb)
    assert "is not read on the accuracy axis" not in out + err
    assert compare_main([ra, rb, "--metric", "bogus"]) == ExitCode.USAGE_ERROR
    assert "unknown retrieval metric 'bogus'; use mrr" in capsys.readouterr().err


def test_the_design_checks_share_of_nonzero_deltas_is_not_called_discordance(tmp_path, capsys):
    """An abstention against a wrong answer differs in label, not in score: the items line's
    discordance (labels) and the design check's share (deltas) differ, and are named apart."""
    items_a = {f"c{g}-{i}": ["abstain" if i < 3 else "correct" if (g + i) % 2 else "wrong"]
               for g in range(6) for i in range(10)}
    items_b = {k: ["wrong"] if v == ["abstain"] else ["correct"] if k.endswith("-4") else v for k, v in items_a.items()}
    ra, rb = str(accuracy_run(tmp_path / "a", items_a)), str(accuracy_run(tmp_path / "b", items_b))
    _, out, _ = compare_cli(capsys, ra, rb)
    check = next(line for line in out.splitlines() if line.startswith("design check"))
    items = next(line for line in out.splitlines() if line.startswith("n items"))
    assert "nonzero deltas" in check and "discordance" not in check
    assert "discordance" in items


def test_a_cluster_column_that_splits_histories_is_refused_one_that_holds_them_is_not(tmp_path, capsys):
    """--cluster-by category on LoCoMo put each conversation's items in five clusters that the
    interval read as independent, with no word; a column coarser than the history is sound."""
    a, b = wtl(30, 90, 0)
    clusters = [f"conv-{i % 12}" for i in range(120)]  # 12 histories of 10 items
    split = [str(1 + i % 5) for i in range(120)]  # every history in all 5 categories
    ra, rb = (str(retrieval_run(tmp_path / n, hits, clusters, categories=split)) for n, hits in (("a", a), ("b", b)))
    code, out, err = compare_cli(capsys, ra, rb, "--cluster-by", "category")
    assert code == ExitCode.USAGE_ERROR and not out
    assert ("--cluster-by category: its clusters split histories here (12 histories; conv-0's 10 items fall in "
            "5 clusters)") in err and "--cluster-by cluster" in err
    assert compare_cli(capsys, ra, rb)[0] != ExitCode.USAGE_ERROR  # the history itself, the default
    coarse = [f"site-{i % 12 // 3}" for i in range(120)]  # each site holds three whole histories
    ca, cb = (str(retrieval_run(tmp_path / f"c{n}", hits, clusters, categories=coarse)) for n, hits in (("a", a), ("b", b)))
    code, out, err = compare_cli(capsys, ca, cb, "--cluster-by", "category")
    assert code != ExitCode.USAGE_ERROR and "split histories" not in err


def test_a_split_made_by_items_without_a_value_says_so(tmp_path, capsys):
    """A column with no value for some items (question_date on LoCoMo has none at all) made
    each such item a cluster of its own, and the refusal read as if the values split the
    history ("conv-42's 199 items fall in 199 clusters"), with no word of the nulls."""
    a, b = wtl(30, 90, 0)
    clusters = [f"conv-{i % 12}" for i in range(120)]  # 12 histories of 10 items
    sites = [None if i == 5 else f"site-{i % 12 // 3}" for i in range(120)]  # coarse, one item of conv-5 without
    ra, rb = (str(retrieval_run(tmp_path / n, hits, clusters, categories=sites)) for n, hits in (("a", a), ("b", b)))
    code, out, err = compare_cli(capsys, ra, rb, "--cluster-by", "category")
    assert code == ExitCode.USAGE_ERROR and not out
    assert ("--cluster-by category: its clusters split histories here (1 history; conv-5's 10 items fall in "
            "2 clusters, 1 of them with no category value (an item without one is a cluster of its own))") in err


def test_a_list_column_to_cluster_or_stratify_by_is_a_usage_error_not_a_bug(tmp_path, capsys):
    """--cluster-by gold_sessions (or gold_keys) failed as 'ArrowNotImplementedError: Unsupported
    cast from list<element: string> to utf8 ... (a bug in memrun: please report it)'."""
    a, b = wtl(30, 90, 0)
    clusters = [f"conv-{i % 12}" for i in range(120)]
    gold = [[f"s{i % 3}"] for i in range(120)]
    ra, rb = (str(retrieval_run(tmp_path / n, hits, clusters, gold_sessions=gold)) for n, hits in (("a", a), ("b", b)))
    for flag in ("--cluster-by", "--stratify-by"):
        code, out, err = compare_cli(capsys, ra, rb, flag, "gold_sessions")
        assert code == ExitCode.USAGE_ERROR and not out
        assert f"{flag} gold_sessions: a column of several values an item (list<" in err and "bug" not in err
