"""Tests for memrun.stats.agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memrun.stats.agreement import agreement, cohen_kappa


def two_by_two(yy: int, yn: int, ny: int, nn: int) -> tuple[list[str], list[str]]:
    a = ["y"] * (yy + yn) + ["n"] * (ny + nn)
    b = ["y"] * yy + ["n"] * yn + ["y"] * ny + ["n"] * nn
    return a, b


def test_kappa_textbook_two_by_two() -> None:
    # p_o = 35/50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.2 / 0.5
    a, b = two_by_two(20, 5, 10, 15)
    assert agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_three_labels_by_hand() -> None:
    a = ["c", "c", "w", "w", "a", "a", "c", "w"]
    b = ["c", "w", "w", "w", "a", "c", "c", "a"]
    # p_o = 5/8; both raters 3 c, 3 w, 2 a: p_e = (9 + 9 + 4) / 64; kappa = 18/42
    assert agreement(a, b) == pytest.approx(5 / 8)
    assert cohen_kappa(a, b) == pytest.approx(3 / 7)


def sklearn_style_kappa(a: list[str], b: list[str]) -> float:
    """scikit-learn's unweighted definition: 1 - sum(w * C) / sum(w * E)."""
    labels = sorted(set(a) | set(b))
    index = {x: i for i, x in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b):
        confusion[index[x], index[y]] += 1
    expected = np.outer(confusion.sum(1), confusion.sum(0)) / confusion.sum()
    weights = 1 - np.eye(len(labels))
    return 1 - (weights * confusion).sum() / (weights * expected).sum()


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_the_sklearn_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.choice(["correct", "wrong", "abstain"], size=80, p=[0.6, 0.3, 0.1]).tolist()
    flip = rng.random(80) < 0.3
    b = [rng.choice(["correct", "wrong", "abstain"]) if f else x for x, f in zip(a, flip)]
    assert cohen_kappa(a, b) == pytest.approx(sklearn_style_kappa(a, b), rel=1e-12)


def test_kappa_limits() -> None:
    assert cohen_kappa(["y", "n", "y"], ["y", "n", "y"]) == 1.0
    assert cohen_kappa(["y", "n"], ["n", "y"]) == -1.0
    assert math.isnan(cohen_kappa(["y", "y"], ["y", "y"]))  # chance agreement is total
    assert cohen_kappa(["y", "y"], ["n", "n"]) == 0.0


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="items"):
        cohen_kappa(["y"], ["y", "n"])
    with pytest.raises(ValueError, match="at least one"):
        agreement([], [])
