"""``gold_share@K``: the share of an item's gold found in its top K, for every benchmark.

recall@K credits an item when *one* gold record is among the top K and recall_all@K
when *all* are; a question with three evidence turns of which two were retrieved
scores 1 and 0. The share in between, |gold found in the top K| / |gold|, is what
LoCoMo's RAG recall (``evidence_share@K``, over the evidence strings as written) and
MemPalace's ``compute_retrieval_recall`` (``benchmarks/locomo_bench.py`` of
github.com/MemPalace/mempalace: the share of the evidence *set* among the retrieved ids)
report. ``gold_share@K`` is its generic form, over the item's normalized gold (distinct
gold keys; ``session_gold_share@K`` over its distinct gold sessions, the sessions read
as the ``session_*`` columns read them). Items without gold are unscored, as for
recall@K: a peer that credits them 1 (MemPalace) differs by that convention only, and
``memrun gallery`` shows the count it credits beside the number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memrun.metrics.retrieval import score_item

GOLD_SHARE = "gold_share"


def gold_share_by_k(matches: Sequence[frozenset[str]], n_gold: int, ks: Iterable[int]) -> dict[int, float]:
    """The share of the ``n_gold`` distinct gold keys satisfied by the first K hits, per K.

    matches: per hit in rank order, the gold keys it satisfies (as :func:`memrun.metrics.
    retrieval.score_item` takes them). Returns {} when ``n_gold`` is 0 (unscored).
    """
    score = score_item(matches, n_gold, ks)  # its walk of the ranking counts the gold found at each K
    return {} if score is None else score.share
