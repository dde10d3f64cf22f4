"""Tests for memrun.stats.labels."""

from __future__ import annotations

import math

import pytest

from memrun.stats.labels import (
    ABSTAIN,
    CORRECT,
    ERROR,
    WRONG,
    flip_rate,
    is_stable,
    majority_label,
)

C, W, A, E = CORRECT, WRONG, ABSTAIN, ERROR


def test_label_strings() -> None:
    assert (C, W, A, E) == ("correct", "wrong", "abstain", "error")


@pytest.mark.parametrize(
    "labels, expected",
    [
        ([C], C),
        ([W], W),
        ([A], A),
        ([C, C, W], C),
        ([C, W, W], W),
        ([A, A, C], A),  # abstain is its own label
        ([C, W], W),  # tie correct/wrong
        ([C, A], W),  # tie correct/abstain is wrong, not abstain
        ([W, A], W),  # tie wrong/abstain
        ([C, W, A], W),  # three-way tie
        ([C, C, W, W, A], W),
        ([C, C, A, A, W], W),
        ([C, E, E], C),  # errors in some repeats are ignored
        ([C, W, E], W),  # ... and can leave a tie
        ([C, C, W, E, E, E], C),
        ([A, E], A),
        ([E], E),
        ([E, E, E], E),  # error only when every repeat errored
        (iter([C, C, W]), C),
    ],
)
def test_majority_label(labels, expected) -> None:
    assert majority_label(labels) == expected


def test_majority_label_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="at least one"):
        majority_label([])
    with pytest.raises(ValueError, match="unknown label"):
        majority_label([C, "Correct"])


@pytest.mark.parametrize(
    "labels, stable",
    [([C, C, C], True), ([C, C, W], False), ([A, A], True), ([A, W], False),
     ([C, E, C], True), ([C, E, W], False), ([E, E], True), ([C], True), ([], True)],
)
def test_is_stable(labels, stable) -> None:
    assert is_stable(labels) is stable


def test_flip_rate_counts_items_with_two_usable_repeats() -> None:
    items = [
        [C, C, C],  # stable
        [C, W, C],  # flipped
        [A, W, W],  # flipped
        [C, E, E],  # one usable repeat: not counted
        [E, E, E],  # none: not counted
        [W, E, W],  # stable
    ]
    assert flip_rate(items) == pytest.approx(2 / 4)
    assert flip_rate([[C, C], [W, W]]) == 0.0
    assert flip_rate([[C, W]]) == 1.0


def test_flip_rate_is_nan_without_repeats() -> None:
    assert math.isnan(flip_rate([[C], [W, E], [E, E]]))
    assert math.isnan(flip_rate([]))


def test_flip_rate_rejects_unknown_labels() -> None:
    with pytest.raises(ValueError, match="unknown label"):
        flip_rate([[C, "maybe"]])


def test_majority_codes_agree_with_majority_label_on_every_count_vector() -> None:
    """Every way of splitting up to 5 repeats over the four labels, against the scalar rule."""
    import itertools

    import numpy as np

    from memrun.stats.labels import LABEL_ORDER, majority_codes

    vectors = [v for v in itertools.product(range(6), repeat=4) if 1 <= sum(v) <= 5]
    majority, stable = majority_codes(np.array(vectors))
    for v, m, s in zip(vectors, majority, stable):
        labels = [lab for lab, n in zip(LABEL_ORDER, v) for _ in range(n)]
        assert LABEL_ORDER[m] == majority_label(labels), v
        assert bool(s) == is_stable(labels), v


def test_item_majority_groups_rows_by_item_as_majority_label_reads_one_item() -> None:
    """Rows of 200 items in shuffled order, 1-5 repeats each: each item's majority is the
    scalar rule over its own rows; out-of-range codes are refused."""
    import random

    import numpy as np

    from memrun.stats.labels import LABEL_ORDER, item_majority

    rng = random.Random(3)
    per_item = [[rng.randrange(4) for _ in range(rng.randint(1, 5))] for _ in range(200)]
    rows = [(item, code) for item, codes in enumerate(per_item) for code in codes]
    rng.shuffle(rows)
    majority, stable, counts = item_majority(np.array([c for _, c in rows]), np.array([i for i, _ in rows]), 201)
    for item, codes in enumerate(per_item):
        labels = [LABEL_ORDER[c] for c in codes]
        assert LABEL_ORDER[majority[item]] == majority_label(labels) and bool(stable[item]) == is_stable(labels)
        assert counts[item].sum() == len(codes)
    assert LABEL_ORDER[majority[200]] == "error" and counts[200].sum() == 0  # an item without rows
    with pytest.raises(ValueError, match="LABEL_ORDER"):
        item_majority(np.array([4]), np.array([0]), 1)
    with pytest.raises(ValueError, match="item indices"):
        item_majority(np.array([0]), np.array([1]), 1)
