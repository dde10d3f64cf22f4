"""Arms: the system under test, behind one small protocol.

An arm is any class named by ``_target_`` in ``conf/arm/<name>.yaml``; its constructor
takes the config's keys except ``name`` and ``top_k`` (which memrun reads itself).
It implements :class:`Arm`: ``ingest`` one history's records, ``search`` a query for
the top ``k`` hits, ``close``; and any optional hook of the arm contract
(:mod:`memrun.arms.contract`: ``describe``, ``prepare_queries``, ``search_item``,
``answer_for``, ``unknown_ids``, ``release``, ``disconnect``, ``thread_safe``), which is
checked when the arm is built. The built-in arms and the contract are documented for
users in ``docs/arms.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memrun.arms.contract import (
    DESCRIBE_KEYS,
    RESERVED_KEYS,
    Arm,
    ItemSearcher,
    QueryPreparer,
    describe,
)
from memrun.lazy import lazy
from memrun.records import Hit, Record, new_hits

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # only scored arms need it: arm=http and arm=mcp send their first request without it

__all__ = ["Arm", "ItemSearcher", "QueryPreparer", "DESCRIBE_KEYS", "RESERVED_KEYS", "describe",
           "BYPASS_MODES", "ranked_hits", "top_positive"]


# ``search_mode`` values of arms that do not rank: their hits are not a retrieval
# result, and returning more than top_k is what they are for.
BYPASS_MODES = ("full_context", "oracle")

PY_RANK = 64
"""Rankings of at most this many scores are sorted in Python (:func:`top_positive`): below
it a list sort costs less than numpy's partition and argsort calls."""


def top_positive(scores: np.ndarray, k: int | None) -> tuple[Any, Any]:
    """(record indices, scores) of the best ``k`` positive ``scores`` (one per record; all of
    them with ``k`` None), best first, ties in record order.

    At most :data:`PY_RANK` scores: lists, from Python's stable sort of the scores as floats
    (``reverse`` keeps equal scores in record order, as numpy's stable argsort of the
    negated scores does); more: arrays, from a partition at the k-th best score (ties
    kept) and a stable argsort of those records only.
    """
    if len(scores) <= PY_RANK:
        values = scores.tolist()
        order = [i for i, v in enumerate(values) if v > 0]
        order.sort(key=values.__getitem__, reverse=True)
        if k is not None:
            del order[k:]
        return order, [values[i] for i in order]
    positive = np.flatnonzero(scores > 0)  # ascending: the stable sort keeps record order on ties
    if k is not None and len(positive) > k:
        kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]  # the k-th best score
        positive = positive[scores[positive] >= kth]  # the best k, and any tied with the k-th
    best = positive[np.argsort(-scores[positive], kind="stable")][:k]
    return best, scores[best]


def ranked_hits(records: Sequence[Record], order: Any, scores: Any, k: int) -> list[Hit]:
    """The first ``k`` hits of a ranking: record indices ``order`` (best first) and their
    scores, numpy arrays or lists of ints and floats."""
    # tolist(): plain ints and floats, not one numpy scalar per hit
    at = order[:k] if isinstance(order, list) else np.asarray(order[:k]).tolist()
    values = scores[:k] if isinstance(scores, list) else np.asarray(scores[:k]).tolist()
    return new_hits(records, at, map(float, values))
