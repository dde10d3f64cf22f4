"""The retrieval part of a row (:func:`memrun.pipeline.one_history.make_row`) stays byte for byte
what it was: a digest over 1,920 seeded rows of every kind of input (duplicate and unknown hit
keys, hits beyond ``top_k``, K beyond it, record and session gold, both session cuts, LoCoMo's
evidence share, LongMemEval's official preset, key and substring gold, failed searches, items
without gold, an arm that scores nothing). The digest was taken from the code before it was made
faster: a change to any value, type, column or column order of any row changes it.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from memrun.metrics.retrieval_official import LME_OFFICIAL_PRESET, OFFICIAL_NO_GOLD
from memrun.pipeline.one_history import Retrieved, make_row
from memrun.records import Dataset, Hit, Item

# Taken again when an arm that retrieves nothing (scored=False) stopped recording a search it never
# made (retrieved_* and search latencies None, not an empty search): the 1,440 scored rows' digest
# was unchanged by that commit, only the 480 unscored rows changed.
ROWS_SHA256 = "29708abd9db7548d813d21c74139458a7f4341c49a570fd2c1d88032c80862c1"
KS = [1, 3, 5, 10]


def _datasets() -> list[Dataset]:
    base = {"split": "t", "sha256": None, "groups": [], "categories": {"1": "one", "2": "two"},
            "comparable_categories": None}
    return [
        Dataset(**base, gold_match="key", session_cut="turns", named_metrics=("evidence_share",)),  # LoCoMo
        Dataset(**base, gold_match="key", session_cut="sessions"),  # LongMemEval, memrun's preset
        Dataset(**base, gold_match="key", session_cut="sessions", preset=LME_OFFICIAL_PRESET, named_metrics=("lme_ndcg",)),
        Dataset(**base, gold_match="substring", session_cut="sessions"),  # BEAM-like phrases
    ]


def _retrieved(rng: random.Random, i: int, substring: bool) -> Retrieved:
    n_records = rng.choice([3, 8, 20])
    keys = [f"D{s}:{t}" for s in range(1, 4) for t in range(1, 8)][:n_records]
    session_of = {k: f"session_{k[1]}" for k in keys} if rng.random() < 0.8 else {}
    texts = {k: f"text of {k} with word{rng.randrange(5)}" for k in keys}
    n_gold = rng.choice([0, 1, 1, 2, 3])
    gold = tuple(rng.sample(keys, min(n_gold, len(keys))))
    if rng.random() < 0.1 and gold:
        gold += ("D9:9",)  # names no record
    gold_keys = tuple(f"word{rng.randrange(5)}" for _ in range(n_gold)) if substring else gold
    raw = gold + (("D7:1",) if rng.random() < 0.2 else ())
    gold_sessions = tuple(sorted({session_of.get(k) or k for k in gold})) if rng.random() < 0.7 else ()
    extra: dict[str, Any] = {}
    if rng.random() < 0.1:
        extra[OFFICIAL_NO_GOLD] = True
    if rng.random() < 0.1:
        extra["note"] = "é"
    item = Item(item_id=f"i{i}", history_id="h", cluster=f"c{i % 7}", category=rng.choice(["1", "2", "3"]),
                question=f"q{i}?", answer=rng.choice([None, f"a{i}"]), answer_raw=json.dumps(f"a{i}"),
                gold_keys=gold_keys, gold_keys_raw=raw, question_date=rng.choice([None, "2023-05-08"]),
                extra=extra, gold_sessions=gold_sessions, abstention=rng.random() < 0.1)
    if rng.random() < 0.05:
        return Retrieved(item, None, None, "search: boom", session_of=session_of, n_records=n_records)
    n_hits = rng.choice([0, 1, 4, 10, 12, 20])
    pool = keys + ["X:1"] if rng.random() < 0.2 else keys  # an unknown key
    picks = [rng.choice(pool) for _ in range(n_hits)]
    if rng.random() < 0.5:
        picks = list(dict.fromkeys(picks))  # no repeats
    hits = [Hit(k, round(rng.uniform(0, 9), 3), texts.get(k, "")) for k in picks]
    return Retrieved(item, hits, rng.uniform(0, 2), None, session_of=session_of, history=frozenset(keys),
                     n_records=n_records, queue_ms=0.0, gold_texts=tuple(texts.get(k) for k in gold) or None,
                     gold_unreachable=sum(k not in texts for k in gold) if gold else None)


def _rows() -> list[dict[str, Any]]:
    rng = random.Random(20261205)
    rows = []
    for dataset in _datasets():
        substring = dataset.gold_match == "substring"
        for top_k in (None, 3, 10):
            for scored in (True, False) if top_k == 10 else (True,):
                for i in range(120):
                    rows.append(make_row("run", _retrieved(rng, i, substring), dataset, KS, top_k, scored=scored))
    return rows


def test_rows_are_unchanged() -> None:
    rows = _rows()
    assert len(rows) == 1920
    text = "\n".join(json.dumps([[k, repr(v), type(v).__name__] for k, v in row.items()], ensure_ascii=False)
                     for row in rows)
    assert hashlib.sha256(text.encode()).hexdigest() == ROWS_SHA256
