"""A test arm that answers itself (the ``answer_for`` hook of an answers-file arm)."""

from __future__ import annotations

from memrun.arms.bm25 import BM25Arm
from memrun.records import Item


class AnsweringArm(BM25Arm):
    """BM25 retrieval plus a fixed answer per item; no answer for items whose id ends in ':0'."""

    def answer_for(self, item: Item) -> str | None:
        return None if item.item_id.endswith(":0") else f"arm says {item.answer}"
