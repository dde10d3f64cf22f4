"""Which groups a shard owns: one run split over processes or machines.

``shard.count=N shard.index=i`` makes a job run only the groups (a LoCoMo conversation,
a LongMemEval question's history) that shard ``i`` owns, so every history is ingested
exactly once over the whole run. Ownership depends on the history ids alone, so every
shard computes the same split on any machine:

- **balanced** (the groups are known up front, as a list: LoCoMo, JSONL): the groups,
  largest first (ties by the sha256 of their id), each go to the shard with the fewest
  items so far (ties: the lowest index); the longest-processing-time rule (Graham
  1969), within 4/3 of the best possible largest shard. 10 LoCoMo conversations over 4
  shards: 3/3/2/2 conversations, where ``sha256 mod 4`` gave 5/2/0/3.
- **hash** (lazy groups, e.g. LongMemEval streamed question by question): the group
  whose ``sha256(history id) mod N == i``; with hundreds of groups it is near even. Hydra's launchers do the
launching (``memrun -m 'shard.index=range(0,8)' shard.count=8 hydra/launcher=...``);
memrun only says which groups a shard owns, records the layout in the instrument
(:func:`shard_facts`; it is not a comparability field), and merges the shards
afterwards (:mod:`memrun.jobs.merge`).

"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from memrun.errors import ConfigError
from memrun.records import Dataset, Group


def shard_of(history_id: str, count: int) -> int:
    """The shard in [0, count) that owns the history ``history_id`` (sha256 of its UTF-8 bytes, mod count)."""
    return int.from_bytes(hashlib.sha256(history_id.encode("utf-8")).digest()[:8], "big") % count


def check(count: Any, index: Any) -> tuple[int, int]:
    """``(count, index)`` as ints; ConfigError naming ``shard.count``/``shard.index`` when
    count < 1 or index is outside [0, count)."""
    try:
        n, i = int(count), int(index)
    except (TypeError, ValueError):
        raise ConfigError(f"shard.count={count!r} shard.index={index!r}: both must be integers") from None
    if n < 1:
        raise ConfigError(f"shard.count={n}: must be at least 1 (1: no sharding)")
    if not 0 <= i < n:
        raise ConfigError(f"shard.index={i}: must lie in [0, {n}) for shard.count={n}; "
                          f"launch the shards as a sweep: 'shard.index=range(0,{n})'")
    return n, i


def items_digest(item_ids: Iterable[str]) -> tuple[int, str]:
    """(count, sha256 of the sorted ids joined by newlines): what a merge checks its union against."""
    ids = sorted(item_ids)
    return len(ids), hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


def balanced(groups: list[Group], count: int) -> dict[str, int]:
    """History id -> shard for known groups: largest first (ties by sha256 of the id), each
    to the shard with the fewest items so far (ties: the lowest index)."""
    loads = [0] * count
    owner: dict[str, int] = {}
    order = sorted(groups, key=lambda g: (-len(g.items), hashlib.sha256(g.history_id.encode("utf-8")).digest()))
    for group in order:
        shard = min(range(count), key=lambda s: (loads[s], s))
        owner[group.history_id] = shard
        loads[shard] += len(group.items)
    return owner


def shard_facts(dataset: Dataset, count: int, index: int) -> dict[str, Any] | None:
    """The layout recorded in the instrument's ``shard`` field (None without sharding):
    ``count``, ``index``, ``assignment`` (``balanced`` or ``hash``) and, when the dataset
    knows its items before producing them, ``items_total`` and ``items_sha256`` of the
    *whole* selection (every shard together)."""
    if count == 1:
        return None
    facts: dict[str, Any] = {"count": count, "index": index,
                             "assignment": "balanced" if isinstance(dataset.groups, list) else "hash"}
    listed = dataset.item_index()
    if listed is not None:
        facts["items_total"], facts["items_sha256"] = items_digest(item_id for item_id, _ in listed)
    return facts


def take_shard(dataset: Dataset, count: int, index: int) -> Dataset:
    """The dataset restricted to the groups shard ``index`` of ``count`` owns (itself when count is 1).

    Lazy groups stay lazy; the item index is kept only when the groups are a list (it
    is then rebuilt from them), since a lazy index does not say which history an item
    belongs to.
    """
    if count == 1:
        return dataset

    def owned(groups: Iterable[Group]) -> Iterator[Group]:
        return (g for g in groups if shard_of(g.history_id, count) == index)

    if isinstance(dataset.groups, list):
        owner = balanced(dataset.groups, count)
        groups = [g for g in dataset.groups if owner[g.history_id] == index]
        return dataclasses.replace(dataset, groups=groups,
                                   index=[(i.item_id, i.category) for g in groups for i in g.items])
    return dataclasses.replace(dataset, groups=_Owned(dataset.groups, owned), index=None)


class _Owned:
    """Lazy groups filtered on each iteration (a lazy iterable starts over on each ``iter()``)."""

    def __init__(self, groups: Iterable[Group], owned: Any) -> None:
        self.groups, self.owned = groups, owned

    def __iter__(self) -> Iterator[Group]:
        return self.owned(self.groups)


def owns_no_history(count: int, index: int, benchmark: str) -> str:
    """The warning of shard ``index`` of ``count`` that owns no history of ``benchmark`` (more
    shards than histories): legitimate in a sweep, so the run completes with 0 items, saying
    so. :mod:`memrun.jobs.merge` leaves this line out of the merged run, which is the whole."""
    return (f"shard.index={index} of shard.count={count} owns no history of benchmark={benchmark}: it ran 0 "
            "items (more shards than histories); its figures are empty, the sweep's are memrun merge's")
