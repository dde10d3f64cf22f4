"""``arm=okapi``: Okapi BM25 exactly as rank_bm25's ``BM25Okapi`` scores it.

``arm=bm25`` scores as bm25s does (its ``lucene`` idf by default, its tokenizer and
stopwords). Several published baselines instead index with rank_bm25 (github.com/
dorianbrown/Rank-BM25, ``BM25Okapi``: idf = log((N - n + 0.5) / (n + 0.5)), an idf below
0 replaced by ``epsilon`` x the mean idf, k1 = 1.5, b = 0.75) and tokenize on whitespace
(rank_bm25's own example) or on word characters, lower-cased (memory-core-eval 0.2.0,
``mceval/adapters/bm25_baseline.py``: ``[A-Za-z0-9_]+``). This arm builds a
``BM25Okapi`` per history with rank_bm25 itself, so its scores are rank_bm25's, and
ranks every record by score, ties in record order (Python's stable ``sorted`` on the
score, as those baselines rank), zero scores included: it always returns ``k`` hits
when the history holds ``k`` records.

Tokenizers (``arm.tokenizer``): ``whitespace`` (``str.split()``, case kept),
``word_lower`` (``[A-Za-z0-9_]+``, lower-cased) and ``space`` (``str.split(" ")``: split on
single spaces only, newlines kept inside tokens, empty tokens kept; LongMemEval's official
``flat-bm25``, ``src/retrieval/run_retrieval.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memrun.arms import ranked_hits
from memrun.errors import ArmError
from memrun.lazy import lazy
from memrun.records import Hit, Record

if TYPE_CHECKING:
    import rank_bm25
else:
    rank_bm25 = lazy("rank_bm25")  # only arm=okapi (and arm=hybrid arm.lexical=okapi) needs it

_WORD = re.compile(r"[A-Za-z0-9_]+")


def _word_lower(text: str) -> list[str]:
    return [t.lower() for t in _WORD.findall(text)]


def _space(text: str) -> list[str]:
    return text.split(" ")


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {"whitespace": str.split, "word_lower": _word_lower,
                                                     "space": _space}


class OkapiArm:
    """rank_bm25's ``BM25Okapi`` over one history's records (see the module docstring).

    k1, b, epsilon: ``BM25Okapi``'s parameters (its defaults 1.5, 0.75, 0.25).
    tokenizer: a name of :data:`TOKENIZERS`. Raises ArmError for an unknown tokenizer or
    a parameter out of range.
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, tokenizer: str = "whitespace") -> None:
        if tokenizer not in TOKENIZERS:
            raise ArmError(f"arm.tokenizer={tokenizer!r}: use one of {', '.join(TOKENIZERS)}")
        if not k1 >= 0:
            raise ArmError(f"arm.k1={k1!r}: must be >= 0 (rank_bm25's default 1.5)")
        if not 0 <= b <= 1:
            raise ArmError(f"arm.b={b!r}: must lie in [0, 1] (rank_bm25's default 0.75)")
        self.k1, self.b, self.epsilon, self.tokenizer = float(k1), float(b), float(epsilon), tokenizer
        self._tokenize = TOKENIZERS[tokenizer]
        self._records: Sequence[Record] = ()
        self._index: Any = None

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "lexical", "lexical_scoring": self.scoring(), "ties": "record_order"}

    def scoring(self) -> str:
        """The instrument's ``lexical_scoring``: the scorer, its parameters and tokenizer."""
        return f"rank_bm25 BM25Okapi k1={self.k1:g} b={self.b:g} epsilon={self.epsilon:g} tokenizer={self.tokenizer}"

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records
        corpus = [self._tokenize(r.text) for r in records]
        self._index = rank_bm25.BM25Okapi(corpus, k1=self.k1, b=self.b, epsilon=self.epsilon) if corpus else None

    def rank(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(record indices, scores) of every record, best first, ties in record order."""
        if self._index is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        scores = np.asarray(self._index.get_scores(self._tokenize(query)), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        return order, scores[order]

    def search(self, query: str, k: int) -> list[Hit]:
        order, scores = self.rank(query)
        return ranked_hits(self._records, order, scores, k)

    def close(self) -> None:
        self._records, self._index = (), None
