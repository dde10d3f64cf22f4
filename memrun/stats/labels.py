"""Judged labels across repeats: majority label, flip rate, stability.

An item is asked and judged N times (``--repeats N``). Each repeat gets one of four
labels: ``correct``, ``wrong``, ``abstain`` or ``error`` (the request failed).

Majority rule (``majority_label``), in order:

1. Drop ``error`` repeats. If none remain, the item is ``error`` (every repeat
   errored); an error in only some repeats is ignored.
2. Among the rest, a label held by strictly more repeats than any other wins;
   ``abstain`` is a label of its own here.
3. Any tie for the most repeats is ``wrong``: correct vs wrong, correct vs abstain,
   wrong vs abstain and three-way ties alike. So an item is ``correct`` only when
   ``correct`` is the strict plurality of its non-error repeats.

Source: the memrun benchmark methodology, "Repeats and the majority label".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

# The rule's name, as every run's instrument records it: memrun.core.instrument.MAJORITY_RULE.

CORRECT = "correct"
WRONG = "wrong"
ABSTAIN = "abstain"
ERROR = "error"
LABELS = frozenset({CORRECT, WRONG, ABSTAIN, ERROR})


def _checked(labels: Iterable[str]) -> list[str]:
    items = list(labels)
    if not LABELS.issuperset(items):  # one pass in C: a run's summary checks every item's repeats, 3x over
        unknown = sorted({str(x) for x in items if x not in LABELS})
        raise ValueError(f"unknown label(s) {unknown}; expected one of {sorted(LABELS)}")
    return items


def majority_label(labels: Iterable[str]) -> str:
    """The item's label over its repeats, by the rule in the module docstring.

    Args:
        labels: one label per repeat (length N >= 1), each in ``LABELS``.

    Returns:
        One of ``CORRECT``, ``WRONG``, ``ABSTAIN``, ``ERROR``.

    Raises:
        ValueError: no repeats, or a label outside ``LABELS``.
    """
    items = _checked(labels)
    if not items:
        raise ValueError("majority_label needs at least one repeat")
    if items.count(items[0]) == len(items):  # every repeat alike (most items): that label, error too
        return items[0]
    counts: dict[str, int] = {}  # a plain dict: a Counter's machinery cost more than the counting
    for x in items:
        if x != ERROR:
            counts[x] = counts.get(x, 0) + 1
    if len(counts) <= 1:
        return next(iter(counts), ERROR)
    top = max(counts.values())
    winners = [label for label, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else WRONG


def is_stable(labels: Iterable[str]) -> bool:
    """True when all non-error repeats of one item carry the same label.

    Args:
        labels: one label per repeat, each in ``LABELS``.

    Returns:
        False as soon as two non-error repeats disagree; True otherwise,
        including items with fewer than two non-error repeats.

    Raises:
        ValueError: a label outside ``LABELS``.
    """
    items = _checked(labels)
    if not items or items.count(items[0]) == len(items):  # every repeat alike (most items)
        return True
    return len({x for x in items if x != ERROR}) <= 1


def flip_rate(labels_per_item: Iterable[Sequence[str]]) -> float:
    """Within-arm share of repeated items whose labels disagreed.

    Args:
        labels_per_item: per item, its repeats' labels (each in ``LABELS``).

    Returns:
        A fraction in [0, 1]: items with >= 2 non-error repeats that are not
        ``is_stable``, over items with >= 2 non-error repeats. NaN when no item
        has two non-error repeats (no flip could be observed).

    Raises:
        ValueError: a label outside ``LABELS``.
    """
    eligible = flipped = 0
    for labels in labels_per_item:
        items = _checked(labels)
        usable = [x for x in items if x != ERROR] if ERROR in items else items
        if len(usable) >= 2:
            eligible += 1
            flipped += len(set(usable)) > 1
    return flipped / eligible if eligible else math.nan


LABEL_ORDER = (CORRECT, WRONG, ABSTAIN, ERROR)
"""Column order of the label-count matrices that :func:`majority_codes` reads."""


def majority_codes(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The majority rule (module docstring) over many items at once.

    Args:
        counts: shape (n, 4) non-negative ints, how many repeats of each item got each
            label, columns in :data:`LABEL_ORDER` (correct, wrong, abstain, error).

    Returns:
        (majority, stable): shape (n,) int8 indices into :data:`LABEL_ORDER` (the same
        label ``majority_label`` gives for those repeats), and shape (n,) bool
        (``is_stable``: at most one distinct non-error label).

    Raises:
        ValueError: counts not of shape (n, 4), or negative.
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(LABEL_ORDER):
        raise ValueError(f"counts must have shape (n, {len(LABEL_ORDER)}), got {counts.shape}")
    if (counts < 0).any():
        raise ValueError("label counts must be >= 0")
    usable = counts[:, :3]
    top = usable.max(axis=1)
    n_top = (usable == top[:, None]).sum(axis=1)
    majority = np.where(top == 0, LABEL_ORDER.index(ERROR),
                        np.where(n_top > 1, LABEL_ORDER.index(WRONG), usable.argmax(axis=1)))
    stable = (usable > 0).sum(axis=1) <= 1
    return majority.astype(np.int8), stable


def item_majority(row_labels: np.ndarray, items: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The majority rule over each item's rows (its repeats): the one home of "the item's
    label across repeats" for tables of rows (compare's pairing, the credited-for-absence
    count), as :func:`majority_label` is for one item's labels.

    Args:
        row_labels: shape (rows,) int indices into :data:`LABEL_ORDER`, one per row (an
            errored row, or one without a label, is ``error``).
        items: shape (rows,) int, each row's item in ``[0, n_items)``.
        n_items: how many items.

    Returns:
        (majority, stable, counts): :func:`majority_codes` of ``counts``, shape (n_items, 4)
        ints, each item's rows per label (an item without rows: all zero, majority ``error``).

    Raises:
        ValueError: a label or item index out of range.
    """
    row_labels, items = np.asarray(row_labels, dtype=np.int64), np.asarray(items, dtype=np.int64)
    if len(row_labels) and (row_labels.min() < 0 or row_labels.max() >= len(LABEL_ORDER)):
        raise ValueError(f"row labels must index LABEL_ORDER (0..{len(LABEL_ORDER) - 1})")
    if len(items) and (items.min() < 0 or items.max() >= n_items):
        raise ValueError(f"item indices must lie in [0, {n_items})")
    counts = np.bincount(items * len(LABEL_ORDER) + row_labels,
                         minlength=len(LABEL_ORDER) * n_items).reshape(n_items, len(LABEL_ORDER))
    majority, stable = majority_codes(counts)
    return majority, stable, counts
