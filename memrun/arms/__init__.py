"""Arms: the system under test, behind one small protocol.

An arm is any class named by ``_target_`` in ``conf/arm/<name>.yaml``; its constructor
takes the config's keys except ``name`` and ``top_k`` (which memrun reads itself).
It implements :class:`Arm`: ``ingest`` one history's records, ``search`` a query for
the top ``k`` hits, ``close``. It may implement ``describe()`` to report the
instrument fields that depend on it (its keys that are comparability fields of
:class:`memrun.instrument.Instrument`, e.g. ``search_mode``, ``embedder``, are copied
into the run's instrument).

An arm that needs the item itself rather than its question (``arm=oracle``, which
returns the gold evidence) also implements :class:`ItemSearcher`; the run then calls
``search_item`` instead of ``search``. The built-in arms and the protocol are
documented for users in ``docs/arms.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memrun.records import GoldMatch, Hit, Item, Record


@runtime_checkable
class Arm(Protocol):
    """The protocol every arm implements."""

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        """Replace what the arm holds with ``records`` (one history), ready to search."""
        ...

    def search(self, query: str, k: int) -> list[Hit]:
        """Return at most ``k`` hits for ``query`` over the ingested history, best first."""
        ...

    def close(self) -> None:
        """Release resources (called once, also when the run fails or is interrupted)."""
        ...


@runtime_checkable
class ItemSearcher(Protocol):
    """Optional: an arm that answers from the whole item (its gold included)."""

    def search_item(self, item: Item, k: int, gold_match: GoldMatch) -> list[Hit]:
        """Hits for ``item`` (at most ``k`` unless the arm bypasses retrieval), best first.

        gold_match: the dataset's rule for matching hits against ``item.gold_keys``.
        """
        ...


# ``search_mode`` values of arms that do not rank: their hits are not a retrieval
# result, and returning more than top_k is what they are for.
BYPASS_MODES = ("full_context", "oracle")


def describe(arm: object) -> dict[str, Any]:
    """The arm's own instrument fields (``search_mode``, ``embedder``, ...), or {}."""
    fn = getattr(arm, "describe", None)
    return dict(fn()) if callable(fn) else {}
