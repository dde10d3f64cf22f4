"""What memrun compare prints as an interval: never one that cannot be read (one or two
clusters, a degenerate interval), never a bound outside the metric's range."""

from __future__ import annotations

from memrun.commands.compare import main as compare_main
from tests.run_tables import compare_json, retrieval_run


def _runs(tmp_path, a, b, clusters, categories):
    return (str(retrieval_run(tmp_path / "a", a, clusters, categories=categories)),
            str(retrieval_run(tmp_path / "b", b, clusters, categories=categories)))


def _design(tmp_path):
    """Category 1: three clusters of five, B wins every item of two (a t interval on 2
    degrees of freedom past +100 pp); category 2: one cluster with one win in 20."""
    a = [False] * 10 + [True] * 5 + [False] * 20
    b = [True] * 10 + [True] * 5 + [True] + [False] * 19
    clusters = ["c0"] * 5 + ["c1"] * 5 + ["c2"] * 5 + ["d"] * 20
    return _runs(tmp_path, a, b, clusters, ["1"] * 15 + ["2"] * 20)


def test_no_bound_outside_the_range_of_a_difference_and_no_interval_over_one_cluster(tmp_path, capsys):
    """The trial: '3 open-domain +40.0 pp [-28.0, +108.0]' and '1 multi-hop ... 1 cluster ...
    +3.1 pp [+3.1, +3.1]'."""
    ra, rb = _design(tmp_path)
    _, d = compare_json(capsys, ra, rb, "--categories", "all")
    blocks = [d["overall"], *d["per_category"].values()]
    assert all(-1.0 <= blk["low"] <= blk["high"] <= 1.0 for blk in blocks)
    assert d["per_category"]["1"]["truncated"] and d["per_category"]["1"]["high"] == 1.0
    assert d["per_category"]["2"]["n_clusters"] == 1 and "1 cluster(s)" in d["per_category"]["2"]["unreadable"]
    assert -1.0 <= d["verdict"]["low"] <= d["verdict"]["high"] <= 1.0
    compare_main([ra, rb, "--categories", "all"])
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.strip().startswith("2 "))
    assert "+5.0 pp (no interval)" in row and "[" not in row
    assert "+108" not in text and "[+5.0, +5.0]" not in text


def test_a_family_row_prints_no_interval_that_cannot_be_read(tmp_path, capsys):
    """memrun sweep --baseline printed '+2.56 pp [+2.56, +2.56]' for runs of one conversation."""
    a = [False] * 20 + [True] * 20
    clusters, cats = ["conv-26"] * 40, ["1"] * 40
    base = str(retrieval_run(tmp_path / "a", a, clusters, categories=cats))
    arms = [str(retrieval_run(tmp_path / f"b{k}", [True] * (k + 1) + a[k + 1:], clusters, categories=cats))
            for k in (1, 2)]
    compare_main([base, *arms])
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith(tuple(arms))]
    assert len(rows) == 2 and all("(no interval)" in r and "[" not in r for r in rows)
