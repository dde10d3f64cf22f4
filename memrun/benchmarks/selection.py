"""Which items a run asks: gold corrections, slices, samples and limits, for every benchmark.

Applied once, between loading a benchmark and running it (:func:`select`), in this
order:

1. ``benchmark.corrections``: drop items, replace gold (:mod:`memrun.benchmarks.corrections`);
2. ``benchmark.slice``: keep items whose ``category`` (alias ``question_type``) is
   listed and/or whose id is in ``ids`` / ``ids_file`` (one id per line, ``#``
   comments);
3. ``benchmark.sample``: ``n`` items drawn without replacement under ``seed``: the
   ``n`` items whose sha256 of ``"<seed>:<item id>"`` is smallest, so a sample does
   not depend on file order and stays stable when other items are added or dropped;
4. ``benchmark.limit``: the first ``limit`` remaining items in file order. A limit that
   keeps every remaining item (``limit`` >= their count) is no slice: it is dropped
   from the selection as applied, with a warning, so the run's ``slice`` does not
   change (:func:`apply_selection`).

The result is summed up in one canonical string (:meth:`Selection.describe`), e.g.
``category=knowledge-update;sample=100,seed=0;limit=20``; it is the instrument's
``slice`` field, so compare refuses runs on different slices.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.errors import ConfigError
from memrun.lazy import lazy
from memrun.records import Dataset, Group, Item

if TYPE_CHECKING:
    from memrun.benchmarks import corrections as corrections_file
    from memrun.benchmarks.corrections import Corrections
else:
    corrections_file = lazy("memrun.benchmarks.corrections")  # a run with benchmark.corrections only

SLICE_KEYS = ("category", "question_type", "ids", "ids_file")
_LISTED_IDS = 3  # up to this many slice ids are spelled out in the slice string


@dataclass(frozen=True)
class Selection:
    """What :func:`select` keeps (None: no constraint of that kind)."""

    categories: frozenset[str] | None = None
    ids: frozenset[str] | None = None
    sample: int | None = None
    sample_seed: int = 0
    limit: int | None = None
    corrections: Corrections | None = None

    def describe(self) -> str | None:
        """The canonical slice string (None when every item is kept).

        Corrections are not part of it; they have their own instrument field.
        """
        parts = []
        if self.categories is not None:
            parts.append("category=" + ",".join(sorted(self.categories)))
        if self.ids is not None:
            ids = sorted(self.ids)
            if len(ids) <= _LISTED_IDS:
                parts.append("ids=" + ",".join(ids))
            else:
                digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
                parts.append(f"ids={len(ids)}:sha256:{digest}")
        if self.sample is not None:
            parts.append(f"sample={self.sample},seed={self.sample_seed}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return ";".join(parts) or None

    @property
    def empty(self) -> bool:
        """True when the selection keeps every item unchanged."""
        return self.describe() is None and self.corrections is None


def selection_from_config(node: Mapping[str, Any]) -> Selection:
    """Read ``slice``, ``sample``, ``limit`` and ``corrections`` from a benchmark config node.

    Raises ConfigError (one line naming the key) for a bad value or an unreadable
    ids or corrections file.
    """
    slice_node = node.get("slice") or {}
    if not isinstance(slice_node, Mapping):
        raise ConfigError("benchmark.slice must be a mapping of " + ", ".join(SLICE_KEYS))
    unknown = [k for k in slice_node if k not in SLICE_KEYS]
    if unknown:
        raise ConfigError(f"benchmark.slice.{unknown[0]}: unknown key; use {', '.join(SLICE_KEYS)}")
    for key in ("category", "question_type", "ids"):
        if slice_node.get(key) is not None and len(slice_node[key]) == 0:
            raise ConfigError(f"benchmark.slice.{key}=[] selects nothing; list at least one value, or null for all")
    if slice_node.get("category") and slice_node.get("question_type"):
        raise ConfigError("benchmark.slice: category and question_type name the same column; use one of them")
    categories = [str(c) for key in ("category", "question_type") for c in (slice_node.get(key) or [])]
    ids = [str(i) for i in (slice_node.get("ids") or [])]
    if slice_node.get("ids_file"):
        ids += _read_ids(str(slice_node["ids_file"]))
    sample_node = node.get("sample") or {}
    sample = sample_node.get("n") if isinstance(sample_node, Mapping) else sample_node
    seed = sample_node.get("seed", 0) if isinstance(sample_node, Mapping) else 0
    limit = node.get("limit")
    for key, value in (("sample.n", sample), ("limit", limit)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"benchmark.{key}={value}: must be a positive integer (or null for all items)")
    corrections = node.get("corrections")
    return Selection(
        categories=frozenset(categories) if categories else None,
        ids=frozenset(ids) if (ids or slice_node.get("ids_file")) else None,
        sample=sample,
        sample_seed=int(seed or 0),
        limit=limit,
        corrections=corrections_file.load_corrections(corrections) if corrections else None,
    )


def _read_ids(path: str) -> list[str]:
    try:
        lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"benchmark.slice.ids_file={path}: cannot read it ({exc})") from exc
    ids = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not ids:
        raise ConfigError(f"benchmark.slice.ids_file={path}: lists no id (one item id per line; # starts a "
                          "comment); list at least one, or drop ids_file for all items")
    return ids


def sample_ids(ids: Iterable[str], n: int, seed: int) -> set[str]:
    """The ``n`` ids with the smallest sha256 of ``"<seed>:<id>"`` (all of them when fewer)."""
    return set(sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).digest())[:n])


def select(dataset: Dataset, selection: Selection) -> Dataset:
    """The selected Dataset of :func:`apply_selection`."""
    return apply_selection(dataset, selection)[0]


def apply_selection(dataset: Dataset, selection: Selection) -> tuple[Dataset, Selection]:
    """Apply ``selection`` to ``dataset`` (see the module docstring).

    Returns the selected Dataset and the selection as applied: ``selection`` itself, or
    without its ``limit`` when the limit keeps every item left after the other
    selections (a warning then joins the dataset's warnings). Its
    :meth:`Selection.describe` is the run's ``slice``.

    Lazy groups stay lazy: items are filtered and corrected as groups are produced,
    and iteration stops once every selected item was produced (a limit reads only
    the head of a file). Counts ``corrections_applied``, ``corrections_dropped`` and
    ``corrections_unmatched`` go into the dataset's counts. Raises ConfigError for
    slice ids or categories the dataset does not hold, or a sample larger than what
    is left to sample from.
    """
    if selection.empty:
        return dataset, selection
    groups = dataset.groups
    index = dataset.item_index()
    if index is None:  # lazy groups without an index: one pass to list their items
        groups = _replayable(groups)
        index = [(item.item_id, item.category) for group in groups for item in group.items]
    keep, n_eligible = _keep(index, selection, dataset.split)
    if selection.limit is not None and selection.limit >= n_eligible:
        dataset.warnings.append(
            f"benchmark.limit={selection.limit} keeps all {n_eligible} items left after slicing and sampling: "
            "it is no slice, so the run's slice does not name it"
        )
        selection = dataclasses.replace(selection, limit=None)
    corrections = dict(selection.corrections.by_id) if selection.corrections else {}
    present = {item_id for item_id, _ in index}
    if selection.corrections:
        dataset.counts["corrections_dropped"] = sum(1 for i, c in corrections.items() if c.drop and i in present)
        dataset.counts["corrections_unmatched"] = sum(1 for i in corrections if i not in present)
        dataset.counts["corrections_applied"] = sum(1 for i, c in corrections.items() if not c.drop and i in keep)
    selected: Iterable[Group] = _Selected(groups, keep, corrections)
    if isinstance(groups, list):
        selected = list(selected)
    # replace(): every other field of the dataset (strata, averaging, ...) carries over
    return dataclasses.replace(dataset, groups=selected, index=[(i, c) for i, c in index if i in keep]), selection


def _keep(index: list[tuple[str, str]], selection: Selection, split: str) -> tuple[set[str], int]:
    """The ids of the items the selection keeps, and how many were left before the limit."""
    present = {item_id for item_id, _ in index}
    if selection.ids is not None:
        missing = sorted(selection.ids - present)
        if missing:
            more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
            raise ConfigError(f"benchmark.slice.ids: {', '.join(missing[:3])}{more} not in {split}")
    if selection.categories is not None:
        known = {category for _, category in index}
        missing = sorted(selection.categories - known)
        if missing:
            raise ConfigError(
                f"benchmark.slice.category: {', '.join(missing)} not in {split}; categories: {', '.join(sorted(known))}"
            )
    dropped = {i for i, c in (selection.corrections.by_id.items() if selection.corrections else ()) if c.drop}
    eligible = [
        item_id
        for item_id, category in index
        if item_id not in dropped
        and (selection.categories is None or category in selection.categories)
        and (selection.ids is None or item_id in selection.ids)
    ]
    if not eligible:  # each part matched, together nothing: a run of no item measures nothing
        raise ConfigError(f"the selection keeps none of {split}'s {len(index)} items ({selection.describe() or ''}"
                          f"{'; corrections drop the rest' if dropped else ''}): its parts exclude each other; "
                          "widen benchmark.slice")
    if selection.sample is not None:
        if selection.sample > len(eligible):
            raise ConfigError(
                f"benchmark.sample.n={selection.sample} exceeds the {len(eligible)} items left after slicing"
            )
        chosen = sample_ids(eligible, selection.sample, selection.sample_seed)
        eligible = [i for i in eligible if i in chosen]
    n_eligible = len(eligible)
    if selection.limit is not None:
        eligible = eligible[: selection.limit]
    return set(eligible), n_eligible


class _Selected:
    """Groups with only the kept items, corrected; stops once all of them were produced."""

    def __init__(self, groups: Iterable[Group], keep: set[str], corrections: Mapping[str, Any]) -> None:
        self.groups, self.keep, self.corrections = groups, keep, corrections

    def __iter__(self) -> Iterator[Group]:
        remaining = len(self.keep)
        if not remaining:
            return
        source = iter(self.groups)
        try:
            for group in source:
                items = [self._fix(item) for item in group.items if item.item_id in self.keep]
                if items:
                    yield Group(history_id=group.history_id, records=group.records, items=items)
                    remaining -= len(items)
                    if remaining <= 0:
                        return
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def _fix(self, item: Item) -> Item:
        correction = self.corrections.get(item.item_id)
        return correction.apply(item) if correction is not None else item


def _replayable(groups: Iterable[Group]) -> Iterable[Group]:
    """Lazy groups that can be iterated twice (a one-shot iterator is materialized)."""
    return list(groups) if iter(groups) is groups else groups
