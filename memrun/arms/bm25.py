"""``arm=bm25``: in-process BM25 over one history's records, with bm25s.

Scoring is bm25s's (Lù, 2024, "BM25S: Orders of magnitude faster lexical search via
eager sparse scoring"); the arm only tokenizes, indexes once per history and takes the
top k by score. Tokens follow ``bm25s.tokenize``'s rule (lower case, its token pattern,
its stopword lists), applied with the splitter and stopwords of a
``bm25s.tokenization.Tokenizer``: ``bm25s.tokenize`` itself rebuilds the stopword set
for every text and builds hidden progress bars, which made tokenizing most of a
search's time. Records with a zero score (no query term in common) are not returned,
so an arm may return fewer than k hits. Ties are broken by record order, so a run is
deterministic.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np

from memrun.arms import ranked_hits
from memrun.errors import ArmError
from memrun.records import Hit, Record

# bm25s logs every index build at DEBUG; a run builds one per history.
logging.getLogger("bm25s").setLevel(logging.WARNING)

METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")


class BM25Arm:
    """BM25 over the ingested records (see the module docstring).

    method, k1, b: the bm25s variant and its parameters.
    stopwords: ``"en"`` for bm25s's English list, None to keep every token.
    """

    def __init__(self, *, method: str = "lucene", k1: float = 1.5, b: float = 0.75, stopwords: str | None = "en") -> None:
        if method not in METHODS:
            raise ArmError(f"arm.method={method!r} is not a bm25s method; use one of {', '.join(METHODS)}")
        self.method, self.k1, self.b, self.stopwords = method, k1, b, stopwords
        try:
            rule = bm25s.tokenization.Tokenizer(lower=True, stopwords=stopwords)
        except ValueError as exc:
            raise ArmError(f"arm.stopwords={stopwords!r}: {exc}") from None
        self._split = rule.splitter
        self._stop = frozenset(rule.stopwords)
        self._records: Sequence[Record] = ()
        self._index: bm25s.BM25 | None = None

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "lexical"}

    def _tokens(self, texts: list[str]) -> list[list[str]]:
        """Each text's tokens, as ``bm25s.tokenize(texts, stopwords=..., return_ids=False)`` gives them."""
        split, stop = self._split, self._stop
        return [[t for t in split(text.lower()) if t not in stop] for text in texts]

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records
        corpus = self._tokens([r.text for r in records])
        if not any(corpus):
            self._index = None  # nothing indexable: every search returns no hit
            return
        vocab: dict[str, int] = {}  # token -> id, as bm25s numbers them (first seen first)
        ids = [[vocab.setdefault(token, len(vocab)) for token in tokens] for tokens in corpus]
        index = bm25s.BM25(method=self.method, k1=self.k1, b=self.b)
        index.index((ids, vocab), show_progress=False)  # from ids: skips bm25s's own vocab pass
        self._index = index

    def rank(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(record indices, scores) of every record with a positive score, best first."""
        if self._index is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        tokens = self._tokens([query])[0]
        if not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        scores = self._index.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")
        order = order[scores[order] > 0]
        return order, scores[order]

    def search(self, query: str, k: int) -> list[Hit]:
        order, scores = self.rank(query)
        return ranked_hits(self._records, order, scores, k)

    def close(self) -> None:
        self._index = None
        self._records = ()
