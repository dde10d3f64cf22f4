"""Arms that game or break the retrieval metrics (tests only), built on BM25.

Each is named by ``arm._target_=arms.faulty.<Class>`` with ``arm=bm25``, so it takes
bm25's parameters.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence

from memrun.arms.bm25 import BM25Arm
from memrun.records import Hit, Record


class RepeatingArm(BM25Arm):
    """Returns its best record k times (a precision@K gamed by repetition)."""

    def search(self, query: str, k: int) -> list[Hit]:
        return super().search(query, 1) * k


class StutterArm(BM25Arm):
    """Returns each BM25 hit twice in a row, k hits in all (k // 2 distinct)."""

    def search(self, query: str, k: int) -> list[Hit]:
        return [hit for hit in super().search(query, k) for _ in range(2)][:k]


class OverTopKArm(BM25Arm):
    """Returns three times the hits it was asked for (deeper hits would lift MRR)."""

    def search(self, query: str, k: int) -> list[Hit]:
        return super().search(query, 3 * k)


def own_id(key: str) -> str:
    """An id of the server's own, unrelated to the record key it was given."""
    return "mem-" + hashlib.sha256(key.encode()).hexdigest()[:12]


class OwnIdsArm(BM25Arm):
    """Answers with ids of its own, as a memory server that does not return the keys memrun sent."""

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(own_id(h.key), h.score, h.text) for h in super().search(query, k)]


class HalfOwnIdsArm(BM25Arm):
    """Every second hit carries an id of its own (the others keep their record key)."""

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(own_id(h.key), h.score, h.text) if i % 2 else h for i, h in enumerate(super().search(query, k))]


class SessionIdsArm(BM25Arm):
    """Returns the sessions of its BM25 hits (a legitimate arm that ranks sessions, not turns)."""

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        super().ingest(history_id, records)
        self.session_of = {r.key: r.session for r in records}

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(str(self.session_of[h.key]), h.score, h.text) for h in super().search(query, k)]


class LateIndexArm(BM25Arm):
    """Finds nothing for the first third of each history's searches, as a server still indexing."""

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        super().ingest(history_id, records)
        self.searches = 0

    def search(self, query: str, k: int) -> list[Hit]:
        self.searches += 1
        return [] if self.searches % 3 == 1 else super().search(query, k)


class DyingArm(BM25Arm):
    """Its process dies while ingesting (as an out-of-memory kill would end it)."""

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        import os

        os._exit(9)


class KeysOnlyArm(BM25Arm):
    """Returns BM25's hits with their keys and scores only, no text (``Hit(key, score)``)."""

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(h.key, h.score) for h in super().search(query, k)]


class ExitingArm(BM25Arm):
    """Calls ``sys.exit(3)`` from ``search`` (a script's habit carried into an arm)."""

    def search(self, query: str, k: int) -> list[Hit]:
        sys.exit(3)


class ExitingIngestArm(BM25Arm):
    """Calls ``sys.exit(3)`` from ``ingest``."""

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        sys.exit(3)
