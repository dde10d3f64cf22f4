"""The stale check's labelling function."""

from __future__ import annotations

import pytest

from memrun.metrics.stale import contains_value, stale_label


@pytest.mark.parametrize(
    ("response", "value", "expected"),
    [
        ("You live in Denver.", "denver", True),
        ("You moved to São Paulo last year", "Sao Paulo", True),
        ("You have 13 cats", "3", False),
        ("You have 3 cats", "3", True),
        ("Your tea is Earl-Grey", "earl grey", True),
        ("anything", "  ", False),
    ],
)
def test_contains_value_matches_whole_words(response: str, value: str, expected: bool) -> None:
    assert contains_value(response, value) is expected


def test_stale_only_for_wrong_knowledge_update_answers_with_the_old_value() -> None:
    ku = "knowledge-update"
    assert stale_label(category=ku, correct=False, response="Still Denver.", superseded="Denver") is True
    assert stale_label(category=ku, correct=False, response="Boston, I think", superseded="Denver") is False
    # the official judge counts "was Denver, now Austin" as correct: never stale
    assert stale_label(category=ku, correct=True, response="was Denver, now Austin", superseded="Denver") is None
    assert stale_label(category=ku, correct=None, response="Denver", superseded="Denver") is None  # not judged
    assert stale_label(category=ku, correct=False, response="Denver", superseded=None) is None  # value unknown
    assert stale_label(category="multi-session", correct=False, response="Denver", superseded="Denver") is None
    assert stale_label(category="update", correct=False, response="Denver", superseded="Denver",
                       stale_category="update") is True
