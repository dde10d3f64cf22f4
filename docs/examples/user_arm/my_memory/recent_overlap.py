"""A user's own memrun arm: shared query words, plus a small bonus for recent records."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memrun.records import Hit, Record

WORD = re.compile(r"\w+")


class RecentOverlapArm:
    """Score = query words a record contains + recency_weight x its position (0 oldest, 1 newest)."""

    def __init__(self, *, recency_weight: float = 0.1, min_overlap: int = 1) -> None:
        self.recency_weight, self.min_overlap = recency_weight, min_overlap
        self.records: Sequence[Record] = ()
        self.words: list[set[str]] = []

    def describe(self) -> dict[str, str]:
        return {"search_mode": "lexical"}  # copied into the run's instrument

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self.records = records
        self.words = [set(WORD.findall(r.text.lower())) for r in records]

    def search(self, query: str, k: int) -> list[Hit]:
        asked = set(WORD.findall(query.lower()))
        n = max(len(self.records) - 1, 1)
        scored = [(len(asked & words) + self.recency_weight * i / n, i)
                  for i, words in enumerate(self.words) if len(asked & words) >= self.min_overlap]
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [Hit(self.records[i].key, score, self.records[i].text) for score, i in scored[:k]]

    def close(self) -> None:
        self.records, self.words = (), []
