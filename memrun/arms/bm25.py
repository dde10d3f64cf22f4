"""``arm=bm25``: in-process BM25 over one history's records, scored as bm25s scores.

Scores are bm25s's (Lù, 2024, "BM25S: Orders of magnitude faster lexical search via
eager sparse scoring") bit for bit; the arm tokenizes, scores once per history and
takes the top k by score. Tokens follow ``bm25s.tokenize``'s rule (lower case, its
token pattern, its stopword lists; ``bm25s.tokenize`` itself rebuilds the stopword set
for every text and builds hidden progress bars, which made tokenizing most of a
search's time). Records with a zero score (no query term in common) are not returned,
so an arm may return fewer than k hits. Ties are broken by record order, so a run is
deterministic.

Five things make a run over many histories cheap without changing a single score:

- **Tokens a history at a time.** A history's record texts are tokenized together, in a
  few numpy and Arrow passes over all of them (:mod:`memrun.arms.bm25_tokens`), into
  run-wide token ids equal to the ones a text-by-text pass gives; only the distinct
  tokens meet Python.
- **Lazy scoring.** bm25s precomputes every (record, token) score when it indexes (a
  Python loop over the records), which pays off only over many queries; LongMemEval
  asks one query per history. Instead, the first search of a history scores only its
  own tokens (a scan of the history's token ids for them); the second computes every
  (token, record) score of the history at once with numpy, which later searches read
  (LoCoMo asks ~200 questions per conversation). When the run announces more than one
  question for the history (:meth:`BM25Arm.prepare_queries`), the first search computes
  them at once and the scan is skipped. Both use bm25s's idf and
  term-frequency formulas in bm25s's floating-point order, so the scores are
  bit-identical to bm25s's (a test compares them for every method). Methods with a
  non-occurrence term (bm25l, bm25+) use the bm25s index.
- **No SciPy.** The lazy methods take the formulas and the English stopword list from
  :mod:`memrun.arms.bm25_rules` without importing bm25s, whose package imports SciPy's
  sparse matrices (~0.1 s of a run's start) for the index they do not build.
- **Dense rows for a small history.** A history of at most :data:`DENSE_CELLS` (token,
  record) cells (a LoCoMo conversation) also lays its scored postings out as a (token,
  record) float32 matrix when it builds them: a later search adds its tokens' rows, one
  numpy addition per token in query order, where the postings scatter each token's scores
  into the records (a record without the token adds 0.0, which changes no sum: the same
  float32 additions in the same order, so the same bits).
- **A partial sort.** ``search(query, k)`` sorts only the records that can be in the top
  k (:func:`memrun.arms.top_positive`: a partition at the k-th best score, ties kept; a
  stable sort in Python for a short ranking), not every record with a score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memrun.arms import ranked_hits, top_positive
from memrun.arms.bm25_rules import (
    IDF,
    TFC,
    idf_values,
    import_bm25s,
    split_tokens,
    stopword_list,
)
from memrun.arms.bm25_tokens import HistoryTokens
from memrun.core.run_warnings import warn
from memrun.errors import ArmError
from memrun.records import Hit, Record

if TYPE_CHECKING:
    import bm25s

METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")
LAZY_METHODS = tuple(IDF)  # robertson, lucene, atire: no non-occurrence term, a query needs only its own tokens
DENSE_CELLS = 1 << 21
"""A history whose distinct tokens x records is at most this (8 MiB of float32) also lays its
scored postings out as a (token, record) matrix (module docstring)."""


def _runs(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted, non-empty array starts, then its length:
    ``np.flatnonzero(np.diff(ordered, prepend=x) != 0)`` and ``len`` in fewer numpy calls."""
    new = np.empty(len(ordered) + 1, dtype=bool)
    new[0] = new[-1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:-1])
    return np.flatnonzero(new)


class BM25Arm:
    """BM25 over the ingested records (see the module docstring).

    method, k1, b: the bm25s variant and its parameters.
    stopwords: ``"en"`` for bm25s's English list, None to keep every token.
    """

    def __init__(self, *, method: str = "lucene", k1: float = 1.5, b: float = 0.75, stopwords: str | None = "en") -> None:
        if method not in METHODS:
            raise ArmError(f"arm.method={method!r} is not a bm25s method; use one of {', '.join(METHODS)}")
        if not (isinstance(k1, (int, float)) and math.isfinite(k1) and k1 >= 0):  # term-frequency saturation; 0 ignores tf
            raise ArmError(f"arm.k1={k1!r}: must be a finite number >= 0 (BM25's usual range is 1.2-2.0; "
                           "bm25s's default 1.5)")
        if not (isinstance(b, (int, float)) and 0 <= b <= 1):  # b: length normalization, 0 none to 1 full
            raise ArmError(f"arm.b={b!r}: must be between 0 and 1 (0: no length normalization; the usual 0.75)")
        self.method, self.k1, self.b, self.stopwords = method, k1, b, stopwords
        self._split = split_tokens  # bm25s's default pattern (memrun.arms.bm25_rules)
        self._stop = frozenset(stopword_list(stopwords))
        self._records: Sequence[Record] = ()
        self._index: bm25s.BM25 | None = None
        self._token_ids = HistoryTokens(self._stop)
        self._vocab = self._token_ids.vocab  # token -> run-wide id (stopwords: -1)
        self._ids = np.zeros(0, dtype=np.int32)  # the ingested records' token ids, record after record
        self._lengths = np.zeros(0, dtype=np.int64)  # each ingested record's number of tokens
        self._flat_cache: tuple[np.ndarray, np.ndarray, np.ndarray, Any] | None = None  # see _flat
        self._scored: tuple[np.ndarray, list[int], np.ndarray, np.ndarray] | None = None  # see _postings
        self._dense: tuple[dict[int, int], np.ndarray] | None = None  # token id -> row; (token, record) scores
        self._searches = 0  # searches of the ingested history so far
        self._announced = 0  # questions the run said it will ask of the ingested history (prepare_queries)
        self._lazy = method in LAZY_METHODS
        self.queries_without_tokens = 0  # queries that tokenize to nothing (every word a stopword, or none)
        self.queries_unknown = 0  # queries none of whose tokens any ingested record holds

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "lexical", "lexical_scoring": self.scoring(), "ties": "record_order"}

    def scoring(self) -> str:
        """The instrument's ``lexical_scoring``: the bm25s method, its parameters and stopwords."""
        return f"bm25s {self.method} k1={self.k1:g} b={self.b:g} stopwords={self.stopwords or 'none'}"

    def _tokens(self, texts: list[str]) -> list[list[str]]:
        """Each text's tokens, as ``bm25s.tokenize(texts, stopwords=..., return_ids=False)`` gives them."""
        split, stop = self._split, self._stop
        return [[t for t in split(text.lower()) if t not in stop] for text in texts]

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records
        self._index = None
        self._flat_cache = self._scored = self._dense = None
        self._searches = self._announced = 0
        self._ids, self._lengths = self._token_ids.ids([r.text for r in records])

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Note how many questions will search the ingested history: with more than one, its
        first search scores every (token, record) pair at once, which the later ones read,
        instead of scanning the history for its own tokens first (the same scores)."""
        self._announced = len(queries)

    @property
    def _has_tokens(self) -> bool:
        """Whether any ingested record has a token."""
        return len(self._ids) > 0

    def _build_index(self) -> bm25s.BM25 | None:
        """The bm25s index of the ingested records (None when no record has a token)."""
        if not self._has_tokens:
            return None
        lengths, flat = self._lengths, self._ids
        # Local ids, numbered as bm25s numbers them from tokens: first seen first.
        uniq, first = np.unique(flat, return_index=True)
        by_first = np.argsort(first, kind="stable")
        local = np.empty(len(uniq), dtype=np.int64)
        local[by_first] = np.arange(len(uniq))
        ids = local[np.searchsorted(uniq, flat)]
        corpus = [chunk.tolist() for chunk in np.split(ids, np.cumsum(lengths)[:-1])]
        vocab = {int(g): int(i) for g, i in zip(uniq, local)}  # run-wide id -> local id
        bm25s = import_bm25s()  # only bm25l and bm25+ build its index (and import SciPy with it)
        index = bm25s.BM25(method=self.method, k1=self.k1, b=self.b)
        index.index((corpus, vocab), show_progress=False)  # from ids: skips bm25s's own vocab pass
        return index

    def _flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
        """(token ids of every record in order, each one's record, record lengths, mean
        length as bm25s takes it: an int array's mean, a float64) of the ingested history."""
        if self._flat_cache is None:
            lengths, flat = self._lengths, self._ids
            mean = lengths.sum() / len(lengths)  # lengths.mean() exactly (an exact int sum, one division), 4x faster
            self._flat_cache = (flat, np.repeat(np.arange(len(lengths)), lengths), lengths, mean)
        return self._flat_cache

    def _idf(self, df: np.ndarray, n_docs: int) -> np.ndarray:
        """idf as bm25s stores it (float32), from each term's document frequency (> 0)."""
        return np.array(idf_values(self.method, df.tolist(), n_docs), dtype=np.float32)

    def _values(self, term_of: np.ndarray, idf: np.ndarray, doc: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The score each (term, record) pair adds, as bm25s computes and stores it: a
        float32 idf times a float64 term-frequency component, stored as float32."""
        _, _, lengths, avg_doc_len = self._flat()
        tfc = TFC[self.method](counts.astype(np.float32), lengths[doc], avg_doc_len, self.k1, self.b)
        return (idf[term_of] * tfc).astype(np.float32)

    def _first_pairs(self, terms: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term index into the sorted ``terms``, record, count) of every (term, record)
        pair with the term in the record, sorted by term then record: a scan of the
        history for the query's own tokens, for its first search."""
        flat, doc_of, lengths, _ = self._flat()
        n_docs = len(lengths)
        terms_array = np.array(terms, dtype=flat.dtype)
        at = np.isin(flat, terms_array)
        keys = np.searchsorted(terms_array, flat[at]).astype(np.int64) * n_docs + doc_of[at]
        keys, counts = np.unique(keys, return_counts=True)
        term_of, doc = np.divmod(keys, n_docs)
        return term_of, doc, counts

    def _postings(self) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
        """(the history's distinct token ids, sorted; where each one's postings start in
        the next two arrays, plus their end; the postings' records, ascending within a
        token; the score each posting adds), built once per history, at its second
        search: a history searched once never builds them."""
        if self._scored is None:
            flat, doc_of, lengths, _ = self._flat()
            n_docs = len(lengths)
            keys = flat.astype(np.int64) * n_docs + doc_of  # each token's (token, record) pair as one number
            keys.sort()  # by token, then record: count the runs
            pairs = _runs(keys)  # each distinct pair's first place, then the end
            counts = pairs[1:] - pairs[:-1]
            token, doc = np.divmod(keys[pairs[:-1]], n_docs)
            bounds = _runs(token)
            starts = bounds[:-1]
            df = bounds[1:] - bounds[:-1]
            term_of = np.repeat(np.arange(len(starts)), df)
            values = self._values(term_of, self._idf(df, n_docs), doc, counts)
            self._scored = (token[starts], bounds.tolist(), doc, values)
            if len(starts) * n_docs <= DENSE_CELLS:
                matrix = np.zeros((len(starts), n_docs), dtype=np.float32)
                matrix[term_of, doc] = values
                self._dense = (dict(zip(token[starts].tolist(), range(len(starts)))), matrix)
        return self._scored

    def _dense_scores(self, query_ids: list[int]) -> np.ndarray:
        """:meth:`_lazy_scores` from a small history's (token, record) matrix: the query's
        rows added one after another, in query order (module docstring)."""
        assert self._dense is not None
        row_of, matrix = self._dense
        rows = [row_of[t] for t in query_ids if t in row_of]
        if not rows:
            return np.zeros(matrix.shape[1], dtype=np.float32)
        total = matrix[rows[0]]
        for row in rows[1:]:
            total = total + matrix[row]  # a new array: the matrix's rows stay as they are
        return total

    def _lazy_scores(self, query_ids: list[int]) -> np.ndarray:
        """bm25s's scores of every record for ``query_ids`` (run-wide ids, query order),
        computed from the query's own tokens only; equal bit for bit to the index's (see
        the module docstring)."""
        self._searches += 1
        if self._dense is not None:  # a small history's later searches
            return self._dense_scores(query_ids)
        n_docs = len(self._lengths)
        terms = sorted(set(query_ids))
        if self._searches == 1 and self._announced <= 1:  # a lone first search: scan the history for its tokens
            term_of, doc, counts = self._first_pairs(terms)
            bounds_array = np.searchsorted(term_of, np.arange(len(terms) + 1))
            df = np.diff(bounds_array)
            idf = np.zeros(len(terms), dtype=np.float32)  # 0: not in this history, which bm25s leaves out
            idf[df > 0] = self._idf(df[df > 0], n_docs)
            values = self._values(term_of, idf, doc, counts)
            where = {t: i for i, t in enumerate(terms) if df[i]}
            bounds = bounds_array.tolist()
        else:  # later searches: the scored postings, built once
            tokens, bounds, doc, values = self._postings()
            if self._dense is not None:
                return self._dense_scores(query_ids)
            at = np.searchsorted(tokens, terms).tolist()
            where = {t: i for t, i in zip(terms, at) if i < len(tokens) and tokens[i] == t}
        scores = np.zeros(n_docs, dtype=np.float32)
        for term in query_ids:  # in query order, repeats included, as bm25s adds them
            i = where.get(term)
            if i is not None:
                lo, hi = bounds[i], bounds[i + 1]
                scores[doc[lo:hi]] += values[lo:hi]
        return scores

    def _scores(self, query: str) -> np.ndarray | None:
        """The ingested records' scores for ``query``, one per record; None when no record
        can score (no record has a token, or the query has no token the run has seen:
        counted)."""
        if not self._has_tokens:
            return None
        tokens = self._tokens([query])[0]  # stopwords are out already
        query_ids = [i for i in map(self._vocab.get, tokens) if i is not None]
        if not query_ids:  # counted: such a search returns nothing, whatever the index holds
            self.queries_without_tokens += not tokens
            self.queries_unknown += bool(tokens)
            return None
        if self._lazy:
            return self._lazy_scores(query_ids)
        if self._index is None:
            self._index = self._build_index()
        assert self._index is not None
        local = self._index.vocab_dict
        return self._index.get_scores_from_ids([local[g] for g in query_ids if g in local])

    def rank(self, query: str, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(record indices, scores) of every record with a positive score, best first
        (ties in record order); with ``k``, only the first ``k`` of them."""
        scores = self._scores(query)
        if scores is None:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        order = np.asarray(top_positive(scores, k)[0], dtype=np.intp)
        return order, scores[order]

    def search(self, query: str, k: int) -> list[Hit]:
        scores = self._scores(query)
        if scores is None:
            return []
        order, values = top_positive(scores, k)
        return ranked_hits(self._records, order, values, k)

    def close(self) -> None:
        if self.queries_without_tokens or self.queries_unknown:
            warn(f"arm=bm25: {self.queries_without_tokens} queries tokenize to nothing (stopwords only, or no word "
                 f"the tokenizer splits out) and {self.queries_unknown} have no token any ingested record holds "
                 "(another language or script?): their searches return no hit")
            self.queries_without_tokens = self.queries_unknown = 0
        self._index = None
        self._records = ()
        self._ids, self._lengths = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
        self._flat_cache = self._scored = self._dense = None
