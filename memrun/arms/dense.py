"""``arm=dense``: cosine top-k over one history's record embeddings, with numpy.

Each record's text is embedded once per embedder (the on-disk cache,
:mod:`memrun.arms.embed_cache`, serves it to later histories, runs and arms), the
vectors are L2-normalized, and a query's scores are one matrix-vector product. Ties are
broken by record order, so a run is deterministic. The instrument gets
``search_mode=vector``, ``embedder`` (the model's name) and ``embedder_dim``.

The run hands the arm each group's questions before searching them
(:meth:`DenseArm.prepare_queries`): they are embedded in one batch through the cache
instead of one forward pass each, and each search then takes its question's vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memrun.arms import ranked_hits
from memrun.arms.embed_cache import CachedEmbedder, Embedder, EmbeddingCache
from memrun.records import Hit, Record


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class DenseArm:
    """Cosine similarity between the query's and the records' embeddings.

    embedder: an :class:`~memrun.arms.embed_cache.Embedder` (built by Hydra from
        ``arm.embedder._target_``; see :mod:`memrun.arms.embedders`).
    cache_dir: folder of the embedding cache (None: the per-user cache folder).
    use_cache: False embeds every text every time (for measuring the embedder).
    Raises ArmError when the embedder is not one or the cache cannot be opened.
    """

    def __init__(self, *, embedder: Embedder, cache_dir: str | None = None, use_cache: bool = True) -> None:
        self.embedder = CachedEmbedder(embedder, EmbeddingCache(cache_dir) if use_cache else None)
        self._records: Sequence[Record] = ()
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._queries: dict[str, np.ndarray] = {}  # question -> normalized vector, for the current group

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "vector", "embedder": self.embedder.name, "embedder_dim": self.embedder.dim}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records
        self._queries = {}
        self._matrix = normalize_rows(self.embedder.embed([r.text for r in records]))

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed the questions about to be searched in one batch (through the cache).

        Replaces the vectors prepared for the previous group; a query not prepared is
        embedded on its own when searched. Errors propagate (the run then lets each
        search embed its own question).
        """
        distinct = list(dict.fromkeys(queries))
        self._queries = dict(zip(distinct, normalize_rows(self.embedder.embed(distinct)))) if distinct else {}

    def _query_vector(self, query: str) -> np.ndarray:
        vector = self._queries.get(query)
        return normalize_rows(self.embedder.embed([query]))[0] if vector is None else vector

    def rank(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(record indices, cosine scores) of every record, best first."""
        if not len(self._records):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self._matrix @ self._query_vector(query)
        order = np.argsort(-scores, kind="stable")
        return order, scores[order]

    def search(self, query: str, k: int) -> list[Hit]:
        order, scores = self.rank(query)
        return ranked_hits(self._records, order, scores, k)

    def close(self) -> None:
        self.embedder.close()
        self._records = ()
        self._queries = {}
