"""arm=bm25 tokenizes a history at a time (memrun.arms.bm25_tokens): the tokens, their ids and
every retrieval row equal the text-by-text tokenizer's, on LoCoMo, BEAM 100K, a
LongMemEval-shaped file and random Unicode text."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import loader as lme_loader
from memrun.arms.bm25 import BM25Arm
from memrun.arms.bm25_rules import split_tokens, stopword_list
from memrun.arms.bm25_tokens import HistoryTokens, Vocabulary
from memrun.benchmarks.beam import Beam
from memrun.benchmarks.lme_synth import SynthSpec, write
from memrun.benchmarks.locomo import LoCoMo
from memrun.records import Record

BEAM_CONF = Path(__file__).resolve().parents[2] / "conf" / "benchmark" / "beam.yaml"


class TextByText:
    """The tokenizer as it was: ``findall`` of each lower-cased text, one vocabulary lookup
    per token, in text order (the reference the history-at-a-time one must equal)."""

    def __init__(self, stopwords: frozenset[str]) -> None:
        self.vocab = Vocabulary.of(stopwords)

    def ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        docs = [np.array([i for i in map(self.vocab.__getitem__, split_tokens(t.lower())) if i >= 0], dtype=np.int32)
                for t in texts]
        flat = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int32)
        return flat, np.array([len(d) for d in docs], dtype=np.int64)


def _reference_arm(**kwargs) -> BM25Arm:
    arm = BM25Arm(**kwargs)
    arm._token_ids = TextByText(arm._stop)  # type: ignore[assignment]
    arm._vocab = arm._token_ids.vocab
    return arm


def _same_tokens(histories: Sequence[Sequence[str]], stopwords: str | None = "en") -> int:
    stop = frozenset(stopword_list(stopwords))
    new, old = HistoryTokens(stop), TextByText(stop)
    n = 0
    for texts in histories:
        (ids, lengths), (ref_ids, ref_lengths) = new.ids(texts), old.ids(texts)
        assert ids.dtype == ref_ids.dtype and lengths.tolist() == ref_lengths.tolist()
        assert ids.tobytes() == ref_ids.tobytes()  # the same ids: numbered in the same order
        n += len(ids)
    assert dict(new.vocab) == dict(old.vocab)  # so the same token strings behind them
    return n


def _same_rows(groups, k: int = 50) -> int:
    """Every item's hits (keys, scores bit for bit, ranks) equal between the two arms."""
    arm, ref = BM25Arm(), _reference_arm()
    n = 0
    for group in groups:
        records = list(group.records)
        arm.ingest(group.history_id, records)
        ref.ingest(group.history_id, records)
        for item in group.items:
            assert arm.search(item.question, k) == ref.search(item.question, k), item.item_id
            n += 1
    return n


@pytest.mark.parametrize("small_chars", [0, 1000, 1 << 20], ids=["passes", "mixed", "text-by-text"])
def test_random_unicode_text_gives_the_text_by_text_tokens(monkeypatch, small_chars):
    """Both ways of tokenizing (the passes over a history, and text by text under
    SMALL_CHARS) give the reference's ids, and so does a run mixing them (histories here
    hold 0-2,400 characters)."""
    monkeypatch.setattr("memrun.arms.bm25_tokens.SMALL_CHARS", small_chars)
    rng = random.Random(7)
    alphabet = ("ab_1 Zé\u00df\u4e2d-.'\n\t!xΣσς İı\u0301\u00b2\u2155\u0660\ud800\U0001f600ǅﬁ" + "ΑΣ ΟΔΟΣ" + "\x00\x1f\u2028")
    histories = [["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(rng.randint(0, 40))]
                 for _ in range(300)]
    histories += [[], [""], ["a"], ["ab"], ["THE the The"], ["ΟΔΟΣ ΟΔΟΣ."], ["x", "y", "xy"], ["café", "ascii only"]]
    assert _same_tokens(histories) > 1000
    assert _same_tokens(histories, stopwords=None) > 1000


def test_a_history_longer_than_a_batch_gives_the_same_tokens(monkeypatch):
    monkeypatch.setattr("memrun.arms.bm25_tokens.BATCH_CHARS", 50)
    rng = random.Random(3)
    texts = [" ".join(rng.choices(["alpha", "beta", "the", "gamma_1", "é", "dé"], k=rng.randint(0, 30)))
             for _ in range(200)]
    assert _same_tokens([texts, texts[:1], ["x" * 200]]) > 1000


@pytest.mark.realdata
def test_locomo_tokens_and_rows_are_unchanged(data_dir):
    ds = LoCoMo(split="locomo10", file="locomo10.json", url=None, sha256=None, categories={}).load(data_dir)
    groups = list(ds.groups)
    assert _same_tokens([[r.text for r in g.records] for g in groups]) > 100_000
    assert _same_rows(groups) > 1900


@pytest.mark.realdata
def test_beam_100k_tokens_and_rows_are_unchanged(beam_dir):
    categories = yaml.safe_load(BEAM_CONF.read_text())["categories"]
    ds = Beam(split="100K", url="http://127.0.0.1:9/none", categories=categories).load(beam_dir)
    groups = list(ds.groups)
    assert _same_tokens([[r.text for r in g.records] for g in groups]) > 500_000
    assert _same_rows(groups) == 400


def test_longmemeval_shaped_tokens_and_rows_are_unchanged(tmp_path):
    path = tmp_path / "lme.json"
    write(path, SynthSpec(questions=30, sessions=12, turns=6, turn_chars=300, reuse=0.0, seed=9))
    groups = list(lme_loader(path).load(tmp_path).groups)
    assert _same_tokens([[r.text for r in g.records] for g in groups]) > 10_000
    assert _same_rows(groups) == 30


@pytest.mark.parametrize("method", ["lucene", "bm25l"])
def test_rows_are_unchanged_for_the_lazy_and_the_indexed_methods(method):
    rng = random.Random(5)
    words = [f"w{i}" for i in range(40)] + ["the", "and", "Ünï", "ünï"]
    arm, ref = BM25Arm(method=method), _reference_arm(method=method)
    for history in range(10):
        records = [Record(f"r{i}", " ".join(rng.choices(words, k=rng.randint(0, 20)))) for i in range(rng.randint(0, 25))]
        arm.ingest(str(history), records)
        ref.ingest(str(history), records)
        for _ in range(3):
            query = " ".join(rng.choices(words, k=3))
            assert arm.search(query, 5) == ref.search(query, 5)
