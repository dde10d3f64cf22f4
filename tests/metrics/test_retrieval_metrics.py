import math

import pytest

from memrun.metrics.retrieval import (
    aggregate,
    distinct_ranking,
    item_column_for,
    item_columns,
    measured_ks,
    score_item,
)

NO = frozenset()


def m(*keys: str) -> frozenset[str]:
    return frozenset(keys)


def test_first_hit_at_rank_two_of_two_gold():
    # ranking: miss, gold a, miss, gold b ; two gold keys
    s = score_item([NO, m("a"), NO, m("b")], n_gold=2, ks=(1, 3, 5))
    assert s.first_gold_rank == 2
    assert s.rr == 0.5
    assert s.hit == {1: False, 3: True, 5: True}
    assert s.all == {1: False, 3: False, 5: True}
    # precision@K divides by K (trec_eval's P@K), even with 4 hits returned
    assert s.precision[1] == 0.0
    assert s.precision[3] == pytest.approx(1 / 3)
    assert s.precision[5] == pytest.approx(2 / 5)
    # nDCG@5: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert s.ndcg[5] == pytest.approx(expected)
    assert s.ndcg[1] == 0.0


def test_gold_key_matched_twice_is_credited_once():
    s = score_item([m("a"), m("a")], n_gold=1, ks=(2,))
    assert s.ndcg[2] == pytest.approx(1.0)
    assert s.precision[2] == 1.0  # both hits are relevant records
    assert s.all[2] is True


def test_no_relevant_hit_and_empty_ranking():
    s = score_item([NO, NO], n_gold=1, ks=(1, 10))
    assert s.first_gold_rank is None and s.rr == 0.0
    assert s.hit[10] is False and s.ndcg[10] == 0.0
    empty = score_item([], n_gold=3, ks=(5,))
    assert empty.precision[5] == 0.0 and empty.all[5] is False


def test_item_without_gold_is_not_scored_and_left_out_of_means():
    assert score_item([m("a")], n_gold=0) is None
    rows = [item_columns(score_item([m("a")], 1, (1,)), (1,)), item_columns(None, (1,))]
    agg = aggregate(rows, (1,))
    assert agg["n_scored"] == 1 and agg["recall@1"] == 1.0 and agg["mrr"] == 1.0


def test_aggregate_means_by_hand():
    rows = [
        item_columns(score_item([m("a")], 1, (1, 3)), (1, 3)),  # rr 1
        item_columns(score_item([NO, NO, m("b")], 1, (1, 3)), (1, 3)),  # rr 1/3
        item_columns(score_item([NO], 1, (1, 3)), (1, 3)),  # rr 0
    ]
    agg = aggregate(rows, (1, 3))
    assert agg["mrr"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert agg["recall@1"] == pytest.approx(1 / 3)
    assert agg["recall@3"] == pytest.approx(2 / 3)
    assert agg["rank@1"] == agg["recall@1"]


@pytest.mark.parametrize(
    "metric,column",
    [("mrr", "rr"), ("recall@5", "hit_at_5"), ("recall_all@10", "all_at_10"), ("ndcg@3", "ndcg_at_3"), ("rank@1", "hit_at_1")],
)
def test_item_column_for(metric, column):
    assert item_column_for(metric) == column


@pytest.mark.parametrize("bad", ["recall", "recall@0", "map@5", "recall@x"])
def test_item_column_for_rejects(bad):
    with pytest.raises(ValueError, match="unknown retrieval metric"):
        item_column_for(bad)


def test_distinct_ranking_keeps_first_occurrences() -> None:
    assert distinct_ranking(["a", "a", "b", "a", "c", "b"]) == [0, 2, 4]
    assert distinct_ranking([]) == []


def test_measured_ks_and_unmeasured_columns_are_null() -> None:
    assert measured_ks((1, 5, 20), 10) == (1, 5) and measured_ks((1, 5), None) == (1, 5)
    columns = item_columns(score_item([m("a")], 1, measured_ks((1, 20), 10)), (1, 20))
    assert columns["hit_at_1"] is True and columns["hit_at_20"] is None and columns["ndcg_at_20"] is None
    agg = aggregate([columns, columns], (1, 20))
    assert agg["recall@1"] == 1.0 and agg["recall@20"] is None and agg["precision@20"] is None
