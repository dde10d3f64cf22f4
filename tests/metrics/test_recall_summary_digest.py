"""A recall run's summary (:func:`memrun.metrics.run_level.summarize_rows`) and the caveat
counts of both axes (:func:`memrun.metrics.conventions.run_counts`) stay byte for byte what
they were when the summary read its rows as columns (:mod:`memrun.metrics.columns`): seeded
rows of every kind (errored searches, unscored items, rows without session columns, items
without a category, empty and missing retrieved keys, gold no record can reach, LongMemEval's
official no-gold flag, LoCoMo's evidence share). The digests were taken from the code before
that change: any change to a figure, a key or a key's place changes them."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from accuracy.test_summary_digest import _rows as accuracy_rows
from memrun.metrics.conventions import run_counts
from memrun.metrics.run_level import summarize_rows

RECALL_SHA256 = {False: "619c84ec17d96658736ea66a6623d02bb47fa8636b8b7d8ec6884ce99ccd918b",
                 True: "8f7d4eed808bf3a765f2a7cd39cb9a4dbe7f8e14b8bf86577fc2bf3e57212c2b"}
RECALL_COUNTS_SHA256 = "fe091020f00ba71578366bc906f0cf0fe832ce59a370a73f48bdc7af4242c7c5"
ACCURACY_COUNTS_SHA256 = "882e9118772462641b77f5fece65262626f0db07c7a3d6b8367098dd20d0125b"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, default=repr).encode()).hexdigest()


def _recall_rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(400):
        row = {"item_id": f"i{i}", "repeat": 0, "cluster": f"c{i % 17}",
               "category": rng.choice(["1", "2", "3", "4", "5", None]), "abstention": rng.random() < 0.1,
               "error": "search: boom" if rng.random() < 0.05 else None,
               "retrieved_keys": rng.choice([None, [], ["D1:1"], ["D1:1", "D2:2"]]), "gold_keys": rng.choice([[], ["D1:1"]]),
               "gold_keys_raw": rng.choice([[], ["D1:1"]]), "gold_unreachable": rng.choice([None, 0, 1]),
               "search_latency_ms": rng.choice([None, rng.uniform(0, 9)]),
               "extra": rng.choice([None, '{"official_no_gold": true}'])}
        for prefix in ("", "session_"):
            if prefix and rng.random() < 0.2:
                continue  # some rows without session columns at all
            scored = rng.random() < 0.9
            row[f"{prefix}rr"] = rng.choice([0.0, 0.5, 1.0]) if scored else None
            for k in (1, 5):
                for m in ("hit", "all", "precision", "ndcg", "lme_ndcg", "evidence_share", "gold_share"):
                    row[f"{prefix}{m}_at_{k}"] = (
                        (rng.random() if m not in ("hit", "all") else rng.random() < 0.5) if scored else None)
        rows.append(row)
    return rows


def test_recall_summary_and_counts_are_unchanged() -> None:
    rows = _recall_rows(41)
    for task_averaged, expected in RECALL_SHA256.items():
        summary = summarize_rows(rows, axis="recall", ks=[1, 5], categories={"1": "one", "2": "two", "5": "adv"},
                                 comparable_categories=["1", "2", "3", "4"], task_averaged=task_averaged, top_k=5)
        assert _digest(summary) == expected
    counts = run_counts(rows)
    assert counts["credited"]["evidence_share@K"] == {"no_evidence": 178, "empty_context": 44}  # every family counts
    assert _digest(counts) == RECALL_COUNTS_SHA256
    counts = run_counts(accuracy_rows(37))
    assert counts["credited"] == {"accuracy": {"abstained_on_empty_context": 1}}
    assert _digest(counts) == ACCURACY_COUNTS_SHA256
