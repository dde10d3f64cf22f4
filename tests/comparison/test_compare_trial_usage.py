"""A new user's trial of memrun compare: --cluster-by none where items share a history."""

from __future__ import annotations

from memrun.stats import ExitCode
from tests.run_tables import compare_cli, retrieval_run, wtl


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
