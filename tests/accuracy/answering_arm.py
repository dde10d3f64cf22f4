"""Test arms: one that answers itself (the ``answer_for`` hook of an answers-file arm), one that notes its ingests."""

from __future__ import annotations

import time
from typing import Any

from memrun.arms.bm25 import BM25Arm
from memrun.records import Item


class AnsweringArm(BM25Arm):
    """BM25 retrieval plus a fixed answer per item; no answer for items whose id ends in ':0'."""

    def answer_for(self, item: Item) -> str | None:
        return None if item.item_id.endswith(":0") else f"arm says {item.answer}"


INGESTED: list[float] = []  # time.monotonic() of each ingest, for the look-ahead test


class RecordingArm(BM25Arm):
    """BM25 that notes when each history is ingested (in :data:`INGESTED`)."""

    def ingest(self, history_id: str, records: Any) -> None:
        INGESTED.append(time.monotonic())
        super().ingest(history_id, records)


class SlowIngestArm(BM25Arm):
    """BM25 whose every ingest after the first takes 0.3 s: the answer stage's calls in flight
    finish meanwhile, and the next history's rows find their slots free."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ingested = 0

    def ingest(self, history_id: str, records: Any) -> None:
        self.ingested += 1
        if self.ingested > 1:
            time.sleep(0.3)
        super().ingest(history_id, records)
