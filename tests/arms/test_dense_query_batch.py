"""The dense arm embeds a group's questions in one batch, through the cache, before its searches."""

from __future__ import annotations

import zlib

import numpy as np

from memrun.arms.dense import DenseArm
from memrun.arms.hybrid import HybridArm
from memrun.pipeline.one_history import iter_group
from memrun.records import Group, Item, Record


class CountingEmbedder:
    """Feature-hashed word counts (deterministic, row-independent), counting its calls."""

    name = "counting-hash"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % 32] += 1.0
        return out


RECORDS = [Record(f"r{i}", text) for i, text in enumerate(
    ["tomatoes grow in the garden", "invoices are sent monthly", "the cat sleeps all day", "late fees apply"])]


def group(questions):
    return Group("h", RECORDS, [Item(item_id=f"q{i}", history_id="h", cluster="h", category="1", question=q,
                                     answer=None, answer_raw="null", gold_keys=()) for i, q in enumerate(questions)])


def test_questions_are_embedded_in_one_batch_and_hits_are_unchanged(tmp_path):
    questions = ["when are invoices sent", "what grows in the garden", "when are invoices sent", "fees?"]
    batched, single = CountingEmbedder(), CountingEmbedder()
    arm = DenseArm(embedder=batched, cache_dir=str(tmp_path / "a"))
    plain = DenseArm(embedder=single, cache_dir=str(tmp_path / "b"))
    got = [r.hits for r in iter_group(arm, group(questions), 3, "key")]
    plain.ingest("h", RECORDS)
    expected = [plain.search(q, 3) for q in questions]
    assert got == expected
    # records, then the three distinct questions at once; no embedding per search
    assert batched.calls[-1] == ["when are invoices sent", "what grows in the garden", "fees?"]
    assert len(batched.calls) == 2


def test_a_question_not_prepared_is_embedded_when_searched(tmp_path):
    embedder = CountingEmbedder()
    arm = DenseArm(embedder=embedder, cache_dir=str(tmp_path))
    arm.ingest("h", RECORDS)
    arm.prepare_queries(["a"])
    assert arm.search("cat sleeping", 1)[0].key == "r2"
    assert embedder.calls[-1] == ["cat sleeping"]


def test_hybrid_prepares_its_vector_side(tmp_path):
    embedder = CountingEmbedder()
    arm = HybridArm(embedder=embedder, cache_dir=str(tmp_path))
    list(iter_group(arm, group(["late fees", "garden tomatoes"]), 2, "key"))
    assert embedder.calls[-1] == ["late fees", "garden tomatoes"]
