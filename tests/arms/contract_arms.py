"""User arms that break the arm contract (tests only), each one way; built on BM25.

Named by ``arm._target_=arms.contract_arms.<Class>`` with ``arm=bm25``, so they take
bm25's parameters. :class:`Good` keeps the contract, with every optional hook a
sequential arm may have.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memrun.arms.bm25 import BM25Arm
from memrun.records import Hit, Record


class Plain:
    """The required hooks only."""

    def __init__(self, method: str = "lucene", k1: float = 1.5, b: float = 0.75, stopwords: str | None = "en") -> None:
        self.arm = BM25Arm(method=method, k1=k1, b=b, stopwords=stopwords)

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self.arm.ingest(history_id, records)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.arm.search(query, k)

    def close(self) -> None:
        self.arm.close()


class Good(Plain):
    """A sequential arm with the optional hooks spelled and typed as the contract says."""

    prepared: list[list[str]] = []

    def describe(self) -> dict[str, Any]:
        return self.arm.describe()

    def prepare_queries(self, queries: Sequence[str]) -> None:
        Good.prepared.append(list(queries))

    def unknown_ids(self, item_ids: Iterable[str]) -> list[str]:
        return []


class MisspelledHook(Plain):
    """``prepare_query`` for ``prepare_queries``: the run would never call it."""

    def prepare_query(self, queries: Sequence[str]) -> None:
        raise AssertionError("never called")


class ExtraArgument(Good):
    """``describe`` with an argument the run never passes."""

    def describe(self, verbose: bool) -> dict[str, Any]:  # type: ignore[override]
        return {}


class NotAMethod(Good):
    """``unknown_ids`` as a list, not a method."""

    unknown_ids = ["q1"]  # type: ignore[assignment]


class ThreadSafeText(Good):
    """``thread_safe`` as the text "yes": the run reads ``thread_safe is True``."""

    thread_safe = "yes"


class AsyncAnswer(Good):
    """``answer_for`` as a coroutine: the run calls it without awaiting."""

    async def answer_for(self, item: Any) -> str | None:
        return None


class AsyncPrepare(Good):
    """A sequential arm (plain ingest/search) whose ``prepare_queries`` is a coroutine."""

    async def prepare_queries(self, queries: Sequence[str]) -> None:  # type: ignore[override]
        return None
