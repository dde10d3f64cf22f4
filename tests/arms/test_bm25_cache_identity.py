"""arm=bm25's history-at-a-time tokens and lazy scoring change no hit: the arm before them is the reference."""

from __future__ import annotations

import random

import bm25s
import numpy as np
import pytest

from helpers import loader
from memrun.arms.bm25 import METHODS, BM25Arm
from memrun.arms.bm25_rules import BM25S_PATTERN, stopword_list
from memrun.benchmarks.lme_synth import SynthSpec, write
from memrun.records import Record


class ReferenceBM25:
    """arm=bm25 as it was: tokenize every record, build the bm25s index at ingest, query it."""

    def __init__(self, method: str = "lucene", stopwords: str | None = "en") -> None:
        rule = bm25s.tokenization.Tokenizer(lower=True, stopwords=stopwords)
        self.split, self.stop, self.method = rule.splitter, frozenset(rule.stopwords), method

    def tokens(self, text: str) -> list[str]:
        return [t for t in self.split(text.lower()) if t not in self.stop]

    def ingest(self, records: list[Record]) -> None:
        corpus = [self.tokens(r.text) for r in records]
        self.index = None
        if any(corpus):
            vocab: dict[str, int] = {}
            ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus]
            self.index = bm25s.BM25(method=self.method)
            self.index.index((ids, vocab), show_progress=False)

    def rank(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        tokens = self.tokens(query)
        if self.index is None or not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        scores = self.index.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")
        order = order[scores[order] > 0]
        return order, scores[order]


def _same(arm: BM25Arm, ref: ReferenceBM25, query: str) -> None:
    (o1, s1), (o2, s2) = arm.rank(query), ref.rank(query)
    assert o1.tolist() == o2.tolist(), query
    assert s1.tobytes() == s2.tobytes(), query  # bit for bit
    for k in (1, 2, 5):  # the top k alone (a partial sort): the same records, ties in record order
        top_order, top_scores = arm.rank(query, k)
        assert top_order.tolist() == o2[:k].tolist(), (query, k)
        assert top_scores.tobytes() == s2[:k].tobytes(), (query, k)


def test_hits_on_a_generated_longmemeval_file_are_unchanged(tmp_path):
    path = tmp_path / "lme.json"
    write(path, SynthSpec(questions=40, sessions=12, turns=4, turn_chars=160, reuse=0.8, empty_sessions=0.1,
                          repeated_sessions=0.2, seed=3))
    dataset = loader(path).load(tmp_path)
    arm, ref = BM25Arm(), ReferenceBM25()
    n = 0
    for group in dataset.groups:
        arm.ingest(group.history_id, group.records)
        ref.ingest(list(group.records))
        for item in group.items:
            assert arm.search(item.question, 50) == [h for h in _hits(ref, group.records, item.question, 50)]
            n += 1
    assert n == 40


def _hits(ref: ReferenceBM25, records, query: str, k: int):
    from memrun.arms import ranked_hits

    order, scores = ref.rank(query)
    return ranked_hits(records, order, scores, k)


@pytest.mark.parametrize("announced", [False, True], ids=["scan-first", "queries-announced"])
@pytest.mark.parametrize("method", METHODS)
def test_lazy_and_indexed_scores_equal_the_reference_bit_for_bit(method, announced):
    """Either way to a history's first search (a scan for the query's tokens, or every posting
    scored at once when several queries are announced) gives bm25s's scores."""
    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)] + ["the", "and", "of"]
    tied = Record("tied", "w1 w2 w3")  # records with the same text score the same: ties to break
    arm, ref = BM25Arm(method=method), ReferenceBM25(method=method)
    for history in range(15):
        records = [Record(f"r{i}", " ".join(rng.choices(words, k=rng.randint(0, 25)))) for i in range(rng.randint(1, 30))]
        records[rng.randrange(len(records)):rng.randrange(len(records))] = [tied] * 3
        arm.ingest(str(history), records)
        ref.ingest(records)
        queries = [" ".join(rng.choices(words + ["unseen"], k=rng.randint(1, 6))) for _ in range(4)]
        if announced:
            arm.prepare_queries(queries)
        for query in queries:  # several queries of one history: the postings are built once
            _same(arm, ref, query)


def test_the_fast_splitter_gives_bm25s_tokens():
    rule = bm25s.tokenization.Tokenizer(lower=True, stopwords="en")
    arm = BM25Arm()
    assert rule.splitter.__self__.pattern == BM25S_PATTERN  # bm25s's default is the pattern memrun follows
    assert arm._split is not rule.splitter  # the default pattern: the faster equivalent is used
    rng = random.Random(11)
    alphabet = "ab_1 Zé\u00df\u4e2d-.'\n\t!x"
    texts = ["", "a", "a b", "ab", "__", "x1 y2_z", "l'été déjà", "naïve café 中文字 a_b-c", "e.g. U.S.A. 3.14 x"]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(2000)]
    for text in texts:
        assert arm._split(text.lower()) == rule.splitter(text.lower()), text


@pytest.mark.parametrize("stopwords", ["en", "english", None, "de", ["foo", "bar"]])
def test_stopwords_are_the_lists_bm25s_takes(stopwords):
    expected = bm25s.tokenization.Tokenizer(lower=True, stopwords=stopwords).stopwords
    assert stopword_list(stopwords) == tuple(expected)


def test_a_lucene_run_does_not_import_bm25s_or_scipy():
    """The lazy methods read bm25s's English stopwords from its file and score with memrun's
    copy of its formulas: a fresh process that runs the arm never imports bm25s or SciPy."""
    import subprocess
    import sys

    code = ("import sys; from memrun.arms.bm25 import BM25Arm; from memrun.records import Record; "
            "arm = BM25Arm(); arm.ingest('h', [Record('a', 'the tomatoes grow'), Record('b', 'pears')]); "
            "assert sorted(h.key for h in arm.search('tomatoes and pears', 5)) == ['a', 'b']; "
            "print(sorted(m for m in ('bm25s', 'scipy') if m in sys.modules)); "
            "print(len(arm._stop))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert int(out[1]) == len(bm25s.tokenization.Tokenizer(stopwords="en").stopwords) > 20


@pytest.mark.parametrize("dense_cells, py_rank", [(0, 0), (1 << 21, 0), (0, 64), (1 << 21, 64)],
                         ids=["postings-numpy", "dense-numpy", "postings-python", "dense-python"])
@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_every_way_to_score_and_rank_a_history_gives_the_reference_hits(monkeypatch, method, dense_cells, py_rank):
    """The dense rows of a small history and the postings of a large one, ranked in Python or
    with numpy, give bm25s's hits bit for bit: ties (repeated records), an empty history and
    records without a token, k beyond the history, a token repeated in the query, a query
    of stopwords only or with no token any record holds."""
    monkeypatch.setattr("memrun.arms.bm25.DENSE_CELLS", dense_cells)
    monkeypatch.setattr("memrun.arms.PY_RANK", py_rank)
    rng = random.Random(17)
    words = [f"w{i}" for i in range(30)] + ["the", "and"]
    arm, ref = BM25Arm(method=method), ReferenceBM25(method=method)
    histories = [[], [Record("empty", "")], [Record("a", "w1")], [Record("only-stop", "the and")]]
    for _ in range(12):
        records = [Record(f"r{i}", " ".join(rng.choices(words, k=rng.randint(0, 12)))) for i in range(rng.randint(1, 90))]
        records += [Record(f"dup{i}", records[0].text) for i in range(3)]  # equal texts: equal scores, record order
        histories.append(records)
    queries = ["w1", "w1 w1 w2", "the and", "", "unseen words only", "w3 w7 w3 unseen the", "W2 w5 w9 w11 w0"]
    for h, records in enumerate(histories):
        arm.ingest(str(h), records)
        ref.ingest(records)
        arm.prepare_queries(queries)
        for query in queries:
            (order, scores), (ref_order, ref_scores) = arm.rank(query), ref.rank(query)
            assert order.tolist() == ref_order.tolist() and scores.tobytes() == ref_scores.tobytes(), (h, query)
            for k in (1, 3, len(records) + 5):
                assert arm.search(query, k) == _hits(ref, records, query, k), (h, query, k)
