"""Arms: the system under test, behind one small protocol.

An arm is any class named by ``_target_`` in ``conf/arm/<name>.yaml``; its constructor
takes the config's keys except ``name`` and ``top_k`` (which memrun reads itself).
It implements :class:`Arm`: ``ingest`` one history's records, ``search`` a query for
the top ``k`` hits, ``close``. It may implement ``describe()`` to report the
instrument fields that depend on it (its keys that are comparability fields of
:class:`memrun.core.instrument.Instrument`, e.g. ``search_mode``, ``embedder``, are copied
into the run's instrument).

An arm that needs the item itself rather than its question (``arm=oracle``, which
returns the gold evidence) also implements :class:`ItemSearcher`; the run then calls
``search_item`` instead of ``search``. The built-in arms and the protocol are
documented for users in ``docs/arms.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memrun.core.instrument import Instrument
from memrun.errors import ArmError
from memrun.lazy import lazy
from memrun.records import GoldMatch, Hit, Item, Record

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # only scored arms need it: arm=http and arm=mcp send their first request without it


@runtime_checkable
class Arm(Protocol):
    """The protocol every arm implements.

    Methods are called one at a time, never concurrently, but not always from the thread
    that built the arm: on the accuracy axis ``ingest`` and ``search`` may run on a worker
    thread (docs/arms.md, "Threads"). An arm whose ``ingest``/``search`` are coroutines, or
    which sets ``thread_safe = True``, is called concurrently instead, several histories
    open at once, and its ``search`` takes ``history_id`` (:mod:`memrun.pipeline.many_histories`,
    docs/arms.md, "Concurrency").
    """

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


@runtime_checkable
class QueryPreparer(Protocol):
    """Optional: an arm that wants a group's questions before they are searched (the dense
    arm embeds them in one batch). Called after ``ingest``, before the first ``search``."""

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Get ready to search ``queries`` (the group's questions, in item order)."""
        ...


# ``search_mode`` values of arms that do not rank: their hits are not a retrieval
# result, and returning more than top_k is what they are for.
BYPASS_MODES = ("full_context", "oracle")


DESCRIBE_KEYS = Instrument.arm_fields()
"""The instrument fields an arm may set from ``describe()``; other keys it reports are kept
as the instrument's ``arm_info`` (provenance, not compared). Derived from :class:`Instrument`."""
RESERVED_KEYS = Instrument.reserved_fields()
"""Instrument fields the run sets (every other field of :class:`Instrument`); an arm's
``describe()`` may not report them."""


def ranked_hits(records: Sequence[Record], order: Any, scores: Any, k: int) -> list[Hit]:
    """The first ``k`` hits of a ranking: record indices ``order`` (best first) and their scores."""
    # tolist(): plain ints and floats, not one numpy scalar per hit
    return [
        Hit(key=records[i].key, score=float(s), text=records[i].text)
        for i, s in zip(np.asarray(order[:k]).tolist(), np.asarray(scores[:k]).tolist())
    ]


def describe(arm: object) -> dict[str, Any]:
    """The arm's own instrument fields (``search_mode``, ``embedder``, ...), or {}.

    Raises ArmError when ``describe()`` raises, returns something other than a mapping,
    or names a field outside :data:`DESCRIBE_KEYS`.
    """
    fn = getattr(arm, "describe", None)
    if not callable(fn):
        return {}
    name = type(arm).__name__
    try:
        fields = fn()
    except Exception as exc:  # noqa: BLE001 - a user's arm: say where it failed
        raise ArmError(f"arm: {name}.describe() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(fields, Mapping):
        raise ArmError(f"arm: {name}.describe() returned {type(fields).__name__}; it must return a dict")
    clash = sorted(str(k) for k in fields if k in RESERVED_KEYS or not isinstance(k, str))
    if clash:
        raise ArmError(f"arm: {name}.describe() reports {', '.join(clash)}, which the run sets itself; "
                       f"an arm reports {', '.join(DESCRIBE_KEYS)} and any keys of its own")
    return dict(fields)
