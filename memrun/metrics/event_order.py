"""BEAM's event-ordering score: Kendall tau-b (normalized to [0, 1]) times F1.

Source: ``event_ordering_score`` in ``src/evaluation/compute_metrics.py`` of GitHub
``mohammadtavakoli78/BEAM`` at commit ``b2a3ee8b``; memrun computes the same figures from
the same inputs (its own code). The reference list is the question's rubric (the events
in order); the system list is the answer split on ``"\\n"`` (every line, blank ones too,
as the official evaluation does). Each system line is first aligned to a reference
event it states (:func:`align`, the official ``align_with_llm``: for each line in order,
the first reference event not yet matched that an equivalence judge accepts; a line
matched nowhere stays as it is). Then, over the aligned lists:

- ``tp`` = distinct events in both, ``fp`` = system lines (with repeats) not in the
  reference, ``fn`` = reference events not in the system list;
  precision = tp / (tp + fp), recall = tp / (tp + fn), F1 their harmonic mean (0 when
  both are 0);
- both lists are ranked over their union in order of first appearance (reference
  first): an element's rank in a list is its 1-based position there (its last position
  when it occurs twice), ``len(union) + 1`` when absent, so absent elements tie;
- tau_b = ``scipy.stats.kendalltau(ref_ranks, sys_ranks, variant="b", method="auto")``;
  tau_norm = (tau_b + 1) / 2; score = tau_norm x F1.

tau_b is undefined (NaN in scipy) when a ranking is constant, e.g. a union of one
event; the official code then yields NaN. memrun reports ``tau_norm`` and ``score`` as
None in that case (the item leaves the order-score mean and is counted), never 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memrun.lazy import lazy

if TYPE_CHECKING:
    from scipy import stats as scipy_stats
else:
    scipy_stats = lazy("scipy.stats")  # ~1 s to import: only when an ordering is scored


@dataclass(frozen=True)
class OrderScore:
    """The event-ordering figures of one answer (see the module docstring)."""

    precision: float
    recall: float
    f1: float
    tau_b: float | None
    tau_norm: float | None
    score: float | None


def system_events(answer: str) -> list[str]:
    """The answer's lines, as the official evaluation splits them (``answer.split("\\n")``)."""
    return answer.split("\n")


async def align(reference: Sequence[str], system: Sequence[str],
                equivalent: Callable[[str, str], Awaitable[bool]]) -> list[str]:
    """The system list with each line replaced by the first unmatched reference event that
    ``equivalent(reference_event, line)`` accepts (asked in reference order, one at a
    time, stopping at the first yes); a line matched by none stays as it is."""
    used: set[int] = set()
    out: list[str] = []
    for line in system:
        match = None
        for i, event in enumerate(reference):
            if i not in used and await equivalent(event, line):
                match = i
                break
        if match is None:
            out.append(line)
        else:
            used.add(match)
            out.append(reference[match])
    return out


def order_score(reference: Sequence[str], aligned: Sequence[str]) -> OrderScore:
    """tau_norm x F1 of an aligned system list against the reference (module docstring)."""
    ref_set = set(reference)
    tp = len(ref_set & set(aligned))
    fp = sum(1 for x in aligned if x not in ref_set)
    fn = sum(1 for x in reference if x not in set(aligned))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys([*reference, *aligned]))
    absent = len(union) + 1

    def ranks(seq: Sequence[str]) -> list[int]:
        position = {x: i + 1 for i, x in enumerate(seq)}
        return [position.get(u, absent) for u in union]

    with warnings.catch_warnings():  # a constant ranking: scipy warns and returns NaN, handled below
        warnings.simplefilter("ignore")
        tau = float(scipy_stats.kendalltau(ranks(reference), ranks(aligned), variant="b", method="auto").statistic)
    if math.isnan(tau):
        return OrderScore(precision, recall, f1, None, None, None)
    tau_norm = (tau + 1) / 2
    return OrderScore(precision, recall, f1, tau, tau_norm, tau_norm * f1)
