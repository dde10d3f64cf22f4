"""The stale check: a wrong knowledge-update answer that returned the superseded value.

LongMemEval's knowledge-update questions ask for a value the user changed over the
sessions ("where do I live now?"). An arm that retrieves the older session but not the
newer one makes the reader answer with the old value: the answer is wrong *and stale*,
a failure of recency rather than of recall. ``stale_check=true`` labels such answers
in their own column (``stale``), beside the judge's label; it never changes a label.

The superseded value is not in the published files. It comes from the item's
``extra["superseded_answer"]``: a ``superseded_answer`` field in the question object
(files written by ``memrun datasets synth`` carry it) or a ``superseded_answer`` entry
of the gold corrections file (:mod:`memrun.benchmarks.corrections`).

For the accuracy axis: after judging an item, call::

    stale = stale_label(category=item.category, correct=label_is_correct,
                        response=reader_answer, superseded=item.extra.get(SUPERSEDED_KEY))

and write the result to the row's ``stale`` column (None where it does not apply).
"""

from __future__ import annotations

import re
import unicodedata

SUPERSEDED_KEY = "superseded_answer"
"""The ``Item.extra`` key of a knowledge-update question's superseded value."""

KNOWLEDGE_UPDATE = "knowledge-update"
_NON_WORD = re.compile(r"[\W_]+")


def _normalize(text: str) -> str:
    """Case-folded, accents stripped, every run of non-word characters one space."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " " + _NON_WORD.sub(" ", text.casefold()).strip() + " "


def contains_value(response: str, value: str) -> bool:
    """True when ``value`` occurs in ``response`` as whole words.

    Both are case-folded, stripped of accents and punctuation before matching, so
    ``"Denver."`` contains ``denver`` but ``"13 cats"`` does not contain ``3``.
    An empty value is never contained.
    """
    needle = _normalize(value)
    return needle.strip() != "" and needle in _normalize(response)


def stale_label(
    *,
    category: str,
    correct: bool | None,
    response: str | None,
    superseded: str | None,
    stale_category: str = KNOWLEDGE_UPDATE,
) -> bool | None:
    """Label one judged answer for the stale check.

    category: the item's category (LongMemEval: question_type).
    correct: the judge's label (True correct, False wrong, None not judged / error).
    response: the reader's answer. superseded: the value the question's update replaced.
    Returns True when a wrong answer to a ``stale_category`` question contains the
    superseded value (:func:`contains_value`), False when it is wrong without it, and
    None when the check does not apply (another category, a correct or unjudged
    answer, no response, or no superseded value known).
    """
    if category != stale_category or correct is not False or not response or not superseded:
        return None
    return contains_value(response, superseded)
