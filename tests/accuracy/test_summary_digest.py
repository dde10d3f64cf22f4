"""An accuracy run's summary (:func:`memrun.metrics.run_level.summarize_rows`) stays byte for
byte what it was: digests over seeded item x repeat rows of every kind (repeats out of order,
missing and error labels, abstentions, retrieval shared, equal, different or failed across
repeats, fractional and order scores, failure stages, several categories and clusters). The
digests were taken from the code before it was made faster: any change to a figure, a key or
a key's place changes them."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from memrun.metrics.accuracy import item_outcomes
from memrun.metrics.run_level import summarize_rows

# Taken again after 3e1b1aa, which changed the intervals on purpose (the cluster bootstrap joined by
# the small-cluster t: each interval block's low/high and its new keys); every other byte is as before.
# And again when an item none of whose repeats retrieved anything stopped counting as "identical
# retrieval" (16 items' identical_retrieval True -> None, the share 0.9133 -> 0.9085; nothing else moved).
# And again when an item whose reader or judge failed after its search returned counted as a search
# (caveats' n_searches 223 -> 284, empty_searches 77 -> 96; nothing else moved), as the arm checks count it.
SUMMARY_SHA256 = "e641c50ed5cd76f3eaae380fb0931f549539a9ce32664f2e14b054dd2e5dad08"
OUTCOMES_SHA256 = "62e58a0d53af739b93c4b9e5679fcaab66303c80fc2bee877b0718a1e08e9a40"


def _rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(300):
        shared = [f"D{rng.randrange(9)}:{j}" for j in range(rng.choice([0, 3, 10]))]
        base = {"item_id": f"i{i}", "cluster": f"c{i % 23}", "category": rng.choice(["1", "2", "3", "4", "5"]),
                "abstention": rng.random() < 0.1, "error": None, "retrieved_keys": shared, "gold_keys": ["D1:1"],
                "gold_unreachable": None, "search_latency_ms": rng.uniform(0, 3), "rr": rng.choice([None, 0.0, 0.5, 1.0]),
                "hit_at_1": rng.random() < 0.5, "hit_at_5": rng.random() < 0.7, "gold_keys_raw": ["D1:1"]}
        kind = rng.random()
        for repeat in rng.sample(range(3), 3):  # rows arrive in any order
            row = dict(base, repeat=repeat)
            if kind < 0.3:
                row["retrieved_keys"] = list(shared)  # equal, another list
            elif kind < 0.4:
                row["retrieved_keys"] = shared[:1] if repeat else shared  # differs across repeats
            elif kind < 0.45:
                row["retrieved_keys"] = None
            label = rng.choice(["correct", "correct", "wrong", "abstain", "error", None])
            row.update(label=label, judge_score=rng.choice([None, 0.0, 0.5, 1.0]), answer_latency_ms=rng.uniform(1, 9),
                       context_tokens=rng.choice([None, 120, 80]), completion_tokens=rng.choice([None, 5]),
                       order_score=rng.choice([None, None, 0.25, 1.0]), judge_prompt="default",
                       failure_stage=rng.choice([None, "retrieval", "reader"]) if label in ("wrong", "abstain") else None)
            if label == "error":
                row["error"] = "judge: boom"
            rows.append(row)
    return rows


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, default=repr).encode()).hexdigest()


def test_summary_is_unchanged() -> None:
    rows = _rows(37)
    summary = summarize_rows(rows, axis="accuracy", ks=[1, 5], categories={"1": "one", "2": "two", "5": "adv"},
                             comparable_categories=["1", "2", "3", "4"], task_averaged=True,
                             headline="accuracy_abstain_wrong")
    assert _digest(summary) == SUMMARY_SHA256
    outcomes = [{k: v for k, v in o.items() if k != "rows"} | {"rows": [(r["repeat"], r["label"]) for r in o["rows"]]}
                for o in item_outcomes(rows)]
    assert _digest(outcomes) == OUTCOMES_SHA256
