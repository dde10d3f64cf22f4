"""The guard that keeps a comparison from passing on items credited for absence.

Some metrics credit an item by a convention, not by what the arm found: LoCoMo's
``evidence_share@K`` counts a question with no retrieved context 1 (an arm that returns
nothing scores 100), LongMemEval's official ``recall_all@K`` counts ``all`` of an empty
gold set true, and an abstention question is right when the reader abstains on an
empty context (:mod:`memrun.metrics.conventions`). Such items are kept in the means (the
published values need them), but a verdict must not rest on them: when the items one
arm has credited and the other has not lean the difference towards that arm, the
comparison is held (``unresolved``, reason :data:`CREDITED`), never a pass, and says
which convention and how many items. The line is printed whenever either run has
such items, held or not.
"""

from __future__ import annotations

import numpy as np

from memrun.comparison.pairing import Paired
from memrun.metrics.conventions import WORDS

CREDITED = "credited_for_absence"
"""The verdict's reason when it is held by :func:`credited_hold`."""


def credited_counts(paired: Paired) -> dict[str, dict[str, int]]:
    """Arm ("a", "b") -> convention -> paired items credited by it (only non-zero ones)."""
    if not paired.credited:
        return {}
    return {side: {name: int(mask.sum()) for name, mask in by.items() if mask.any()}
            for side, by in paired.credited.items()}


def _any(by: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for mask in by.values():
        out |= mask
    return out


REMEDIES = {
    "empty_context": "compare on a metric that scores an empty context 0 (recall@K, gold_share@K)",
    "abstained_on_empty_context": ("B's abstentions were right because it retrieved nothing, which says nothing "
                                   "about its memory; check B's retrieval on the same runs (--metric recall@K) "
                                   "and its empty searches before reading its accuracy"),
}
"""Convention -> what to do when it holds a verdict, in the words of the axis it is on."""


def remedy(conventions: list[str]) -> str:
    """What a held comparison should do next, for the conventions that credited B's own
    items (:data:`REMEDIES`; one line, its parts joined by '; ')."""
    said = [REMEDIES.get(c, "leave those items out") for c in conventions]
    return "; ".join(dict.fromkeys(said)) or "leave those items out"


def credited_hold(paired: Paired, unit: str = "pp") -> tuple[tuple[str, str] | None, list[str]]:
    """(hold, notes): a hold ``(CREDITED, words)`` when items credited for absence could
    make B's gain over A (or, for a non-inferiority gate, keep B level): B has items
    credited that A has not, and they add to B-minus-A. ``notes`` describe the credited
    items whenever there are any (printed as warnings). unit: how deltas are shown.
    """
    counts = credited_counts(paired)
    if not counts or not any(counts.values()):
        return None, []
    n = paired.n
    in_a, in_b = _any(paired.credited["a"], n), _any(paired.credited["b"], n)  # type: ignore[index]
    delta = paired.b - paired.a
    only_b, only_a = in_b & ~in_a, in_a & ~in_b
    lift = float(delta[only_b].sum()) / n if n else 0.0  # what B's own credited items add to the mean

    def said(side: str) -> str:
        by = counts.get(side) or {}
        return ", ".join(f"{k} {WORDS.get(c, c)}" for c, k in by.items()) or "none"

    scale = 100 if unit == "pp" else 1
    notes = [f"items credited by a convention, not by what the arm found: A {said('a')}; B {said('b')} "
             f"(of {n} paired); B's own ({int(only_b.sum())}) add {scale * lift:+.1f} {unit} to B-A, "
             f"A's own ({int(only_a.sum())}) {scale * float(-delta[only_a].sum()) / max(n, 1):+.1f} {unit} to A-B"]
    if only_b.any() and lift > 0:
        own = ", ".join(f"{int((m & only_b).sum())} {WORDS.get(c, c)}"
                        for c, m in paired.credited["b"].items() if (m & only_b).any())  # type: ignore[index]
        used = [c for c, m in paired.credited["b"].items() if (m & only_b).any()]  # type: ignore[index]
        words = (f"{int(only_b.sum())} of B's paired items are credited by a convention ({own}) and A's are not; "
                 f"they add {scale * lift:+.1f} {unit} to B-A, so the difference could come from them: "
                 f"{remedy(used)}")
        return (CREDITED, words), notes
    return None, notes

