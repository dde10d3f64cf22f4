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
from memrun.records import Hit, Record

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # only scored arms need it: arm=http and arm=mcp send their first request without it

__all__ = ["Arm", "ItemSearcher", "QueryPreparer", "DESCRIBE_KEYS", "RESERVED_KEYS", "describe",
           "BYPASS_MODES", "ranked_hits"]


# ``search_mode`` values of arms that do not rank: their hits are not a retrieval
# result, and returning more than top_k is what they are for.
BYPASS_MODES = ("full_context", "oracle")


def ranked_hits(records: Sequence[Record], order: Any, scores: Any, k: int) -> list[Hit]:
    """The first ``k`` hits of a ranking: record indices ``order`` (best first) and their scores."""
    # tolist(): plain ints and floats, not one numpy scalar per hit
    return [
        Hit(key=records[i].key, score=float(s), text=records[i].text)
        for i, s in zip(np.asarray(order[:k]).tolist(), np.asarray(scores[:k]).tolist())
    ]
