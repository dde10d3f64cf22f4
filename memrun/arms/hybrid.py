"""``arm=hybrid``: reciprocal rank fusion of ``bm25`` (lexical) and ``dense`` (vector).

Weighted RRF (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009): a record's fused score is

    sum over rankings i of  w_i / (rrf_k + rank_i)        (rank 1 = best)

over the rankings that contain it (BM25 ranks only records sharing a term with the
query; dense ranks every record). ``rrf_k`` = 60 as in the paper; ``depth`` keeps only
the first ``depth`` of each ranking (None: all). Ties are broken by record order.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memrun.arms import ranked_hits, top_positive
from memrun.arms.bm25 import BM25Arm
from memrun.arms.dense import DenseArm
from memrun.arms.embed_cache import Embedder
from memrun.arms.okapi import OkapiArm
from memrun.errors import ArmError
from memrun.records import Hit, Record

COMPONENTS = ("lexical", "vector")
TIES = ("record_order", "first_seen")


@functools.lru_cache(maxsize=64)
def _reciprocal_ranks(rrf_k: float, n: int) -> np.ndarray:
    """1 / (rrf_k + rank) for ranks 1..n (cached: a run fuses many rankings of one length)."""
    table = 1.0 / (rrf_k + np.arange(1, n + 1, dtype=np.float64))
    table.setflags(write=False)
    return table


def rrf_scores(rankings: Sequence[np.ndarray], weights: Sequence[float], n: int, *, rrf_k: float = 60.0,
               depth: int | None = None) -> np.ndarray:
    """Fused scores, shape (n,), for rankings of record indices (best first).

    rankings: one int array per ranker, no index twice; a record absent from a ranking
        gets nothing from it. weights: one non-negative weight per ranking. n: number of
        records. Records in no ranking score 0.
    """
    fused = np.zeros(n, dtype=np.float64)
    table = _reciprocal_ranks(float(rrf_k), n)
    for order, weight in zip(rankings, weights):
        order = order[:depth]
        fused[order] += weight * table[: len(order)]
    return fused


def first_seen(rankings: Sequence[np.ndarray], n: int, depth: int | None = None) -> np.ndarray:
    """Each record's position in the concatenated rankings (first ranking first, each cut at
    ``depth``), ``n`` and beyond for records in none: the order a dict of fused scores is
    filled in, which ``sorted`` keeps for ties (memory-core-eval's hybrid)."""
    position = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    at = 0
    for order in rankings:
        order = np.asarray(order[:depth])
        fresh = order[position[order] == np.iinfo(np.int64).max]
        position[fresh] = at + np.flatnonzero(position[order] == np.iinfo(np.int64).max)
        at += len(order)
    return position


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best positive scores, best first, ties in index order
    (:func:`memrun.arms.top_positive`)."""
    return np.asarray(top_positive(scores, k)[0], dtype=np.intp)


class HybridArm:
    """BM25 and dense rankings fused by weighted RRF (see the module docstring).

    embedder, cache_dir, use_cache: as for :class:`~memrun.arms.dense.DenseArm`.
    bm25: keyword arguments of :class:`~memrun.arms.bm25.BM25Arm` (method, k1, b, stopwords).
    lexical: the lexical ranking: ``bm25`` (:class:`~memrun.arms.bm25.BM25Arm` with ``bm25``) or
        ``okapi`` (:class:`~memrun.arms.okapi.OkapiArm` with ``okapi``: rank_bm25's scores).
    weights: ``{"lexical": w, "vector": w}``, non-negative, not both 0.
    rrf_k: the RRF constant (> 0). depth: per-ranking cut-off before fusion (None: all).
    ties: equal fused scores in record order (``record_order``) or in the order the
        rankings list the records, the lexical one first (``first_seen``, :func:`first_seen`).
    Raises ArmError for a bad weight, constant or depth.
    """

    def __init__(
        self,
        *,
        embedder: Embedder,
        weights: Mapping[str, float] | None = None,
        rrf_k: float = 60.0,
        depth: int | None = None,
        ties: str = "record_order",
        bm25: Mapping[str, Any] | None = None,
        lexical: str = "bm25",
        okapi: Mapping[str, Any] | None = None,
        cache_dir: str | None = None,
        use_cache: bool = True,
    ) -> None:
        weights = dict(weights or {"lexical": 1.0, "vector": 1.0})
        unknown = sorted(set(weights) - set(COMPONENTS))
        if unknown:
            raise ArmError(f"arm.weights: unknown component {', '.join(unknown)}; use lexical and vector")
        self.weights = [float(weights.get(c, 1.0)) for c in COMPONENTS]
        if min(self.weights) < 0 or not any(self.weights):
            raise ArmError(f"arm.weights={weights}: weights must be >= 0 and not all 0")
        if rrf_k <= 0:
            raise ArmError(f"arm.rrf_k={rrf_k}: must be positive (the paper uses 60)")
        if depth is not None and depth < 1:
            raise ArmError(f"arm.depth={depth}: must be at least 1, or null for whole rankings")
        if ties not in TIES:
            raise ArmError(f"arm.ties={ties!r}: use record_order (ties in the history's order) or first_seen "
                           "(ties in the order the rankings list them, the lexical one first)")
        self.rrf_k, self.depth, self.ties = float(rrf_k), depth, ties
        if lexical not in ("bm25", "okapi"):
            raise ArmError(f"arm.lexical={lexical!r}: use bm25 (bm25s, arm.bm25) or okapi (rank_bm25, arm.okapi)")
        self.lexical: BM25Arm | OkapiArm = BM25Arm(**dict(bm25 or {})) if lexical == "bm25" else OkapiArm(**dict(okapi or {}))
        self.vector = DenseArm(embedder=embedder, cache_dir=cache_dir, use_cache=use_cache)
        self._records: Sequence[Record] = ()

    def describe(self) -> dict[str, Any]:
        weights = " ".join(f"{c}={w:g}" for c, w in zip(COMPONENTS, self.weights))
        depth = "all" if self.depth is None else self.depth
        return {**self.vector.describe(), "search_mode": "hybrid", "lexical_scoring": self.lexical.scoring(),
                "fusion": f"rrf k={self.rrf_k:g} depth={depth} weights {weights}", "ties": self.ties}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records
        self.lexical.ingest(history_id, records)
        self.vector.ingest(history_id, records)

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed the group's questions in one batch (see :meth:`DenseArm.prepare_queries`)."""
        self.vector.prepare_queries(queries)

    def fuse(self, lexical: np.ndarray, vector: np.ndarray, k: int) -> list[Hit]:
        """The top ``k`` hits of the fused rankings (record indices, best first)."""
        scores = rrf_scores([lexical, vector], self.weights, len(self._records), rrf_k=self.rrf_k, depth=self.depth)
        if self.ties == "first_seen":
            position = first_seen([lexical, vector], len(self._records), self.depth)
            candidates = np.flatnonzero(scores > 0)
            best = candidates[np.lexsort((position[candidates], -scores[candidates]))][:k]
        else:
            best = top_k(scores, k)
        return ranked_hits(self._records, best, scores[best], k)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.fuse(self.lexical.rank(query)[0], self.vector.rank(query)[0], k)

    def close(self) -> None:
        self.lexical.close()
        self.vector.close()
