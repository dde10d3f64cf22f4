"""Hybrid: reciprocal rank fusion against ranks computed by hand."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from memrun.arms.hybrid import HybridArm, rrf_scores, top_k
from memrun.errors import ArmError
from memrun.records import Record


def test_rrf_matches_hand_computed_scores() -> None:
    # lexical ranks record 2 then 0; vector ranks 0, 1, 2.
    scores = rrf_scores([np.array([2, 0]), np.array([0, 1, 2])], [1.0, 1.0], 4, rrf_k=60)
    expected = [1 / 62 + 1 / 61, 1 / 62, 1 / 61 + 1 / 63, 0.0]
    assert scores.tolist() == pytest.approx(expected, abs=1e-15)
    assert top_k(scores, 10).tolist() == [0, 2, 1]  # record 3 is in no ranking: not returned


def test_rrf_weights_and_constant() -> None:
    lexical, vector = np.array([1, 0]), np.array([0, 1])
    # Equal weights: 1/(k+1) + 1/(k+2) for both records, a tie broken by record order.
    assert top_k(rrf_scores([lexical, vector], [1, 1], 2), 2).tolist() == [0, 1]
    # Lexical weight 2: record 1 gets 2/61 + 1/62 > record 0's 2/62 + 1/61.
    scores = rrf_scores([lexical, vector], [2, 1], 2, rrf_k=60)
    assert scores[1] == pytest.approx(2 / 61 + 1 / 62) and scores[0] == pytest.approx(2 / 62 + 1 / 61)
    assert top_k(scores, 2).tolist() == [1, 0]
    # A weight of 0 leaves the other ranking alone; k=1 sharpens the head.
    assert top_k(rrf_scores([lexical, vector], [0, 1], 2), 2).tolist() == [0, 1]
    assert rrf_scores([np.array([0])], [1], 1, rrf_k=1)[0] == pytest.approx(0.5)


def test_rrf_depth_cuts_each_ranking() -> None:
    scores = rrf_scores([np.array([0, 1, 2]), np.array([2, 1, 0])], [1, 1], 3, depth=1)
    assert scores.tolist() == pytest.approx([1 / 61, 0.0, 1 / 61])


class BagOfWords:
    """A tiny embedder (hashed word counts) for exercising the arm without a model."""

    name = "test-bag-of-words"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, zlib.crc32(word.encode()) % 32] += 1
        return out


def test_hybrid_arm_fuses_its_components(tmp_path) -> None:
    records = [Record(f"r{i}", t) for i, t in enumerate(
        ["the cat sat on the mat", "dogs chase cats", "a red car", "the mat was red", "nothing here"])]
    arm = HybridArm(embedder=BagOfWords(), cache_dir=str(tmp_path))
    arm.ingest("h", records)
    lexical, vector = arm.lexical.rank("red mat")[0], arm.vector.rank("red mat")[0]
    expected = top_k(rrf_scores([lexical, vector], [1, 1], 5), 3)
    hits = arm.search("red mat", 3)
    assert [h.key for h in hits] == [records[i].key for i in expected]
    assert hits[0].key == "r3"  # the only record with both words, first in both rankings
    assert arm.describe() == {"search_mode": "hybrid", "embedder": "test-bag-of-words", "embedder_dim": 32,
                              "lexical_scoring": "bm25s lucene k1=1.5 b=0.75 stopwords=en",
                              "fusion": "rrf k=60 depth=all weights lexical=1 vector=1", "ties": "record_order"}
    arm.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"weights": {"lexical": -1}}, "weights must be >= 0"),
    ({"weights": {"lexicl": 1}}, "unknown component lexicl"),
    ({"rrf_k": 0}, "arm.rrf_k=0"),
    ({"depth": 0}, "arm.depth=0"),
])
def test_hybrid_rejects_bad_settings(tmp_path, kwargs, message) -> None:
    with pytest.raises(ArmError, match=message):
        HybridArm(embedder=BagOfWords(), cache_dir=str(tmp_path), **kwargs)


def test_top_k_keeps_boundary_ties_in_record_order() -> None:
    scores = np.array([0.1, 0.2, 0.5, 0.2, 0.2, 0.0])
    assert top_k(scores, 2).tolist() == [2, 1]
    assert top_k(scores, 4).tolist() == [2, 1, 3, 4]
    assert top_k(scores, 10).tolist() == [2, 1, 3, 4, 0]  # the zero is never returned
    rng = np.random.default_rng(7)
    for _ in range(200):  # against a plain stable sort, with many ties
        s = rng.integers(0, 5, size=int(rng.integers(1, 40))).astype(float)
        k = int(rng.integers(1, 12))
        reference = [i for i in np.argsort(-s, kind="stable") if s[i] > 0][:k]
        assert top_k(s, k).tolist() == reference
