"""A benchmark class of the user's own (``benchmark._target_=pkg.Class``) held to what its
``load`` must return, before any item runs, as an arm's hits are held to theirs
(:func:`memrun.pipeline.one_history.check_hits`).

What ``load`` returns reaches the arm, the metrics and the Parquet writer; a value of the
wrong shape there ended in a traceback far from its cause (``'dict' object has no
attribute 'item_index'``, ``ArrowTypeError: Expected bytes, got a 'int' object`` at the
end of the run) or, worse, in numbers that look fine: two items with one id (compare
pairs items by id), an item asked against another history than its group's, gold keys
given as one string (read letter by letter: every item's gold unreachable). Each is one
DataError line naming the class, the group or item and the field.

memrun's own loaders are trusted (their tests hold them to the same shapes; checking
LongMemEval-M's records one by one would cost seconds): :func:`checked_load` checks a
benchmark whose class lives outside :mod:`memrun.benchmarks`. Lazy groups (an iterable
that starts over on each ``iter()``) are checked as they are produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memrun.errors import DataError, MemrunError
from memrun.records import Dataset, Group, Item, Record

GOLD_MATCHES = ("key", "substring")


def checked_load(benchmark: Any, data_dir: Path) -> Dataset:
    """``benchmark.load(data_dir)``; for a benchmark class outside memrun, checked (module
    docstring). Raises DataError, one line, for a load that raised something other than a
    MemrunError or returned data of the wrong shape (lazy groups: when produced)."""
    if type(benchmark).__module__.startswith("memrun.benchmarks."):
        return benchmark.load(data_dir)
    name = f"{type(benchmark).__module__}.{type(benchmark).__qualname__}"
    try:
        loaded = benchmark.load(data_dir)
    except MemrunError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's code: one line naming it, not a traceback
        raise DataError(f"benchmark: {name}.load() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(loaded, Dataset):
        raise DataError(f"benchmark: {name}.load() returned {type(loaded).__name__}; it must return a "
                        "memrun.records.Dataset (docs/benchmarks.md)")
    if loaded.gold_match not in GOLD_MATCHES:
        raise DataError(f"benchmark: {name}.load() returned a Dataset with gold_match={loaded.gold_match!r}; "
                        f"use {' or '.join(map(repr, GOLD_MATCHES))}")
    if isinstance(loaded.groups, (str, bytes)) or not isinstance(loaded.groups, Iterable):
        raise DataError(f"benchmark: {name}.load() returned a Dataset whose groups are "
                        f"{type(loaded.groups).__name__}; give a list of memrun.records.Group")
    groups = _CheckedGroups(loaded.groups, name)
    loaded.groups = list(groups) if isinstance(loaded.groups, list) else groups
    return loaded


class _CheckedGroups:
    """``groups``, each checked as it is produced; ids unique over one pass."""

    def __init__(self, groups: Iterable[Any], name: str) -> None:
        self.groups, self.name = groups, name

    def __iter__(self) -> Iterator[Group]:
        histories: set[str] = set()
        items: set[str] = set()
        for n, group in enumerate(self.groups):
            _check_group(group, n, self.name, histories, items)
            yield group


def _check_group(group: Any, n: int, name: str, histories: set[str], items: set[str]) -> None:
    """Raises DataError for the first problem of the ``n``-th group (0-based)."""
    def fail(where: str, problem: str) -> DataError:
        return DataError(f"benchmark: {name}.load(): {where}: {problem}")

    if not isinstance(group, Group):
        raise fail(f"groups[{n}]", f"is {type(group).__name__}; each group must be a memrun.records.Group")
    hid = group.history_id
    if not isinstance(hid, str) or not hid:
        raise fail(f"groups[{n}].history_id", f"must be non-empty text, got {hid!r:.40}")
    if hid in histories:
        raise fail(f"group {hid!r}", "its history_id is another group's too; history ids are unique")
    histories.add(hid)
    keys: set[str] = set()
    for i, record in enumerate(group.records):
        where = f"group {hid!r}, records[{i}]"
        if not isinstance(record, Record):
            raise fail(where, f"is {type(record).__name__}; each record must be a memrun.records.Record")
        if not isinstance(record.key, str) or not record.key:
            raise fail(f"{where}.key", f"must be non-empty text, got {record.key!r:.40}")
        if not isinstance(record.text, str):
            raise fail(f"{where}.text", f"must be text, got {type(record.text).__name__}")
        if record.key in keys:
            raise fail(f"{where}.key", f"{record.key!r} repeats an earlier record's key; keys are unique in a history")
        keys.add(record.key)
    for item in group.items:
        _check_item(item, hid, fail, items)


def _check_item(item: Any, hid: str, fail: Any, items: set[str]) -> None:
    if not isinstance(item, Item):
        raise fail(f"group {hid!r}", f"holds a {type(item).__name__} among its items; each must be a memrun.records.Item")
    where = f"item {item.item_id!r}"
    if not isinstance(item.item_id, str) or not item.item_id:
        raise fail(f"group {hid!r}, an item's item_id", f"must be non-empty text, got {item.item_id!r:.40}")
    if item.item_id in items:
        raise fail(where, "its item_id is another item's too; item ids are unique (runs are compared item by item)")
    items.add(item.item_id)
    if item.history_id != hid:
        raise fail(f"{where}.history_id", f"is {item.history_id!r:.40}, but the item is in group {hid!r}")
    for field in ("question", "cluster", "category", "answer_raw"):
        value = getattr(item, field)
        if not isinstance(value, str) or (field != "answer_raw" and not value):
            raise fail(f"{where}.{field}", f"must be {'text' if field == 'answer_raw' else 'non-empty text'}, "
                       f"got {value!r:.40}")
    if item.answer is not None and not isinstance(item.answer, str):
        raise fail(f"{where}.answer", f"must be text or None, got {type(item.answer).__name__}")
    for field in ("gold_keys", "gold_keys_raw", "gold_sessions"):
        value = getattr(item, field)
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or \
                not all(isinstance(v, str) for v in value):
            raise fail(f"{where}.{field}", f"must be a tuple of str, got {value!r:.60}" +
                       (" (one str is read letter by letter: wrap it, (key,))" if isinstance(value, str) else ""))
    if not isinstance(item.abstention, bool):
        raise fail(f"{where}.abstention", f"must be True or False, got {item.abstention!r:.40}")
