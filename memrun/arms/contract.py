"""The arm contract: every hook the run may call on an arm, declared once.

Required (:class:`Arm`): ``ingest``, ``search``, ``close``. Optional capabilities, each a
small protocol an arm implements by having the method (or attribute):

===================  =============================================  ===========================
hook                 called                                         protocol
===================  =============================================  ===========================
``describe``         at build: the arm's instrument fields          :class:`Describer`
``prepare_queries``  after ``ingest``, with the group's questions   :class:`QueryPreparer`
``search_item``      instead of ``search`` (the whole item)         :class:`ItemSearcher`
``answer_for``       accuracy axis: the arm's own answer            :class:`SelfAnswerer`
``unknown_ids``      accuracy axis: its answer ids naming no item   :class:`UnknownIds`
``release``          concurrent arms: a history's searches done     :class:`Releaser`
``disconnect``       concurrent arms: the event loop ends           :class:`Disconnector`
``thread_safe``      at build: call it from a pool of threads       :class:`ThreadSafe`
===================  =============================================  ===========================

An arm whose ``ingest``/``search`` are coroutines, or which sets ``thread_safe = True``, is
called concurrently (:data:`ASYNC`, :data:`THREADS`; :mod:`memrun.pipeline.many_histories`)
and its ``search`` takes ``history_id`` (:class:`ConcurrentArm`).

:func:`check_arm` holds a built arm to :data:`ARM_HOOKS` before any work and raises one
:class:`~memrun.errors.ArmError` line naming a missing or mistyped hook, or a public method
one letter off an optional hook (which the run would silently never call). The run then
reaches the hooks only through :func:`arm_hooks`, never by looking names up itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memrun.core.hooks import VALUE, Hook, bind, check
from memrun.core.instrument import Instrument
from memrun.errors import ArmError
from memrun.records import GoldMatch, Hit, Item, Record

CONTRACT = "memrun.arms.contract (docs/arms.md)"
ASYNC, THREADS, SEQUENTIAL = "async", "threads", "sequential"


@runtime_checkable
class Arm(Protocol):
    """The protocol every arm implements.

    Methods are called one at a time, never concurrently, but not always from the thread
    that built the arm: on the accuracy axis ``ingest`` and ``search`` may run on a worker
    thread (docs/arms.md, "Threads"). An arm whose ``ingest``/``search`` are coroutines, or
    which sets ``thread_safe = True``, is called concurrently instead, several histories
    open at once, and its ``search`` takes ``history_id`` (:class:`ConcurrentArm`).
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


class ConcurrentArm(Protocol):
    """An async or thread-safe arm's search: several histories are open, so it names one."""

    async def search(self, query: str, k: int, history_id: str | None = None) -> list[Hit]:
        """At most ``k`` hits for ``query`` over history ``history_id``, best first."""
        ...


@runtime_checkable
class Describer(Protocol):
    """Optional: report the instrument fields that depend on the arm (:data:`DESCRIBE_KEYS`,
    e.g. ``search_mode``, ``embedder``; other keys are kept as ``arm_info``)."""

    def describe(self) -> Mapping[str, Any]:
        """The arm's instrument fields and provenance, as a dict."""
        ...


@runtime_checkable
class QueryPreparer(Protocol):
    """Optional: an arm that wants a group's questions before they are searched (the dense
    arm embeds them in one batch). Called after ``ingest``, before the first ``search``."""

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Get ready to search ``queries`` (the group's questions, in item order)."""
        ...


@runtime_checkable
class ItemSearcher(Protocol):
    """Optional: an arm that answers from the whole item (its gold included); the run calls
    ``search_item`` instead of ``search`` (``arm=oracle``)."""

    def search_item(self, item: Item, k: int, gold_match: GoldMatch) -> list[Hit]:
        """Hits for ``item`` (at most ``k`` unless the arm bypasses retrieval), best first.

        gold_match: the dataset's rule for matching hits against ``item.gold_keys``.
        """
        ...


@runtime_checkable
class SelfAnswerer(Protocol):
    """Optional: an arm that answers items itself (accuracy axis): no reader is built and the
    instrument's reader_model is ``arm:<name>`` (``arm=answers_file``)."""

    def answer_for(self, item: Item) -> str | None:
        """The arm's answer to ``item``, None when it has none (counted in the coverage)."""
        ...


@runtime_checkable
class UnknownIds(Protocol):
    """Optional, with :class:`SelfAnswerer`: the arm's answer ids that name no item."""

    def unknown_ids(self, item_ids: Iterable[str]) -> Iterable[str]:
        """The ids the arm has answers for that are not among ``item_ids`` (every item of the benchmark)."""
        ...


@runtime_checkable
class Releaser(Protocol):
    """Optional, concurrent arms: drop a history once its searches are done (e.g. erase its namespace)."""

    async def release(self, history_id: str) -> None:
        """Forget ``history_id``; an error is the arm's to warn about (``close`` tries again)."""
        ...


@runtime_checkable
class Disconnector(Protocol):
    """Optional, async arms: close connections bound to the event loop before it ends."""

    async def disconnect(self) -> None:
        """Close this loop's connections; ``close`` still runs after it."""
        ...


@runtime_checkable
class ThreadSafe(Protocol):
    """Optional: a synchronous arm that may be called from several threads at once."""

    thread_safe: bool


ARM_HOOKS: tuple[Hook, ...] = (
    Hook("ingest", ("history_id", "records"), required=True),
    Hook("search", ("query", "k"), ("history_id",), required=True),
    Hook("close", required=True, sync=True),
    Hook("describe", sync=True),
    Hook("prepare_queries", ("queries",)),
    Hook("search_item", ("item", "k", "gold_match"), sync=True),
    Hook("answer_for", ("item",), sync=True),
    Hook("unknown_ids", ("item_ids",), sync=True),
    Hook("release", ("history_id",)),
    Hook("disconnect"),
    Hook("thread_safe", kind=VALUE, types=(bool,)),
)
"""The arm contract as the run checks it: one :class:`~memrun.core.hooks.Hook` per method or
attribute above, with the arguments the run passes."""

DESCRIBE_KEYS = Instrument.arm_fields()
"""The instrument fields an arm may set from ``describe()``; other keys it reports are kept
as the instrument's ``arm_info`` (provenance, not compared). Derived from :class:`Instrument`."""
RESERVED_KEYS = Instrument.reserved_fields()
"""Instrument fields the run sets (every other field of :class:`Instrument`); an arm's
``describe()`` may not report them."""


@dataclass(frozen=True)
class ArmHooks:
    """An arm's hooks as the run calls them: each optional one bound, or None when the arm
    does not have it; ``kind`` is :data:`ASYNC`, :data:`THREADS` or :data:`SEQUENTIAL`."""

    kind: str
    describe: Any
    prepare_queries: Any
    search_item: Any
    answer_for: Any
    unknown_ids: Any
    release: Any
    disconnect: Any

    @property
    def concurrent(self) -> bool:
        """Several histories open at once: ``search`` takes ``history_id``."""
        return self.kind != SEQUENTIAL


def arm_hooks(arm: object) -> ArmHooks:
    """``arm``'s hooks (:class:`ArmHooks`). Raises ArmError as :func:`arm_kind` does."""
    bound = bind(arm, ARM_HOOKS)
    return ArmHooks(kind=arm_kind(arm), describe=bound["describe"], prepare_queries=bound["prepare_queries"],
                    search_item=bound["search_item"], answer_for=bound["answer_for"],
                    unknown_ids=bound["unknown_ids"], release=bound["release"], disconnect=bound["disconnect"])


def check_arm(arm: object, name: str | None = None) -> ArmHooks:
    """Hold a built arm to :data:`ARM_HOOKS` (module docstring) and return its hooks.
    ``name``: how the error names the arm (its ``_target_``; default its class name).
    Raises ArmError, one line naming the hook and how it must be written."""
    check(arm, ARM_HOOKS, "arm", CONTRACT, ArmError, name=name)
    hooks = arm_hooks(arm)
    if hooks.kind != ASYNC and inspect.iscoroutinefunction(hooks.prepare_queries):
        raise ArmError(f"arm: {name or type(arm).__name__}.prepare_queries is async def but the arm's ingest/search "
                       f"are not, so memrun calls it without awaiting: make it a plain def ({CONTRACT})")
    return hooks


def class_answers(cls: type) -> bool:
    """True when arm class ``cls`` answers items itself (:class:`SelfAnswerer`): it needs no reader."""
    return bool(bind(cls, ARM_HOOKS)["answer_for"])


def arm_kind(arm: object) -> str:
    """:data:`ASYNC`, :data:`THREADS` or :data:`SEQUENTIAL` (module docstring). Raises ArmError
    for an arm that mixes coroutine and plain ``ingest``/``search``, or a concurrent arm whose
    ``search`` takes no ``history_id``."""
    name = type(arm).__name__
    bound = bind(arm, ARM_HOOKS)
    coroutines = [inspect.iscoroutinefunction(bound[m]) for m in ("ingest", "search")]
    if any(coroutines) and not all(coroutines):
        raise ArmError(f"arm: {name} defines one of ingest/search with async def and the other without; "
                       "make both coroutines (or neither)")
    kind = ASYNC if all(coroutines) else THREADS if bound["thread_safe"] is True else SEQUENTIAL
    if kind != SEQUENTIAL:
        params = inspect.signature(bound["search"]).parameters
        if "history_id" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raise ArmError(f"arm: {name} is {'async' if kind == ASYNC else 'thread_safe'}, so several histories "
                           "are open at once and its search must take history_id: "
                           "search(self, query, k, history_id) (docs/arms.md, 'Concurrency')")
    return kind


def describe(arm: object) -> dict[str, Any]:
    """The arm's own instrument fields (``search_mode``, ``embedder``, ...), or {}.

    Raises ArmError when ``describe()`` raises, returns something other than a mapping,
    or names a field outside :data:`DESCRIBE_KEYS`.
    """
    fn = bind(arm, ARM_HOOKS)["describe"]
    if fn is None:
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
