"""Arms: the system under test, behind one small protocol.

An arm is any class named by ``_target_`` in ``conf/arm/<name>.yaml``; its constructor
takes the config's keys except ``name`` and ``top_k`` (which memrun reads itself).
It implements :class:`Arm`: ``ingest`` one history's records, ``search`` a query for
the top ``k`` hits, ``close``. It may implement ``describe()`` to report the
instrument fields that depend on it (see :data:`memrun.instrument.ARM_FIELDS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memrun.records import Hit, Record


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


def describe(arm: object) -> dict[str, Any]:
    """The arm's own instrument fields (``search_mode``, ``embedder``, ...), or {}."""
    fn = getattr(arm, "describe", None)
    return dict(fn()) if callable(fn) else {}
