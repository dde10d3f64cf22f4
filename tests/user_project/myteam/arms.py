"""A user's own arm, outside memrun: the README's example, also used by the tests."""

import time

from memrun.records import Hit, Record


class KeywordArm:
    """Ranks records by how many query words they contain (a toy, but a complete arm)."""

    def __init__(self, min_overlap: int = 1, delay_ms: float = 0.0, fail_on: str | None = None):
        self.min_overlap = min_overlap
        self.delay_ms = delay_ms
        self.fail_on = fail_on
        self.records: list[Record] = []

    def describe(self) -> dict:
        return {"search_mode": "lexical"}

    def ingest(self, history_id: str, records: list[Record]) -> None:
        self.records = list(records)

    def search(self, query: str, k: int) -> list[Hit]:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        if self.fail_on and self.fail_on in query:
            raise RuntimeError(f"server said no to {query!r}")
        words = {w.strip("?.,!").lower() for w in query.split() if len(w) > 3}
        scored = [(sum(w in r.text.lower() for w in words), i) for i, r in enumerate(self.records)]
        ranked = sorted((s, -i) for s, i in scored if s >= self.min_overlap)[::-1][:k]
        return [Hit(key=self.records[-i].key, score=float(s), text=self.records[-i].text) for s, i in ranked]

    def close(self) -> None:
        self.records = []
