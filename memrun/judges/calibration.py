"""Judge calibration: how often a judge passes known-correct and known-wrong answers.

Probes come from a benchmark's own items (as the benchmark methodology defines them):

- known correct: an item's gold answer phrased as a reader answers (the gold as one
  short sentence);
- known wrong: the gold answer of another item of the same category (different text
  after normalization), phrased the same way;
- abstention items (adversarial, ``extra.abstention``) and items without a gold answer
  are excluded.

The judge grades every probe; TPR = known-correct probes judged correct / known-correct
probes graded, FPR = known-wrong probes judged correct / known-wrong probes graded
(probes whose call failed or whose verdict was unreadable are left out and counted).
The result is a :class:`memrun.stats.calibration.JudgeCalibration` that ``memrun compare
--judge-calibration`` reads to correct paired deltas by Youden's J = TPR - FPR.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memrun.judges import Case, Judge, is_abstention
from memrun.judges.lexical import squad_normalize
from memrun.llm.client import CallError
from memrun.records import Dataset, Item
from memrun.stats.calibration import JudgeCalibration
from memrun.stats.labels import CORRECT, ERROR


@dataclass(frozen=True)
class Probe:
    """One calibration probe: the item asked, the answer to grade, and whether it is known correct."""

    item: Item
    category_label: str
    answer: str
    positive: bool


def phrase(gold: str) -> str:
    """A gold answer as a reader would write it: one short sentence."""
    text = " ".join(gold.split()).rstrip(".")
    return f"{text[:1].upper()}{text[1:]}." if text else text


def build_probes(dataset: Dataset, *, n: int, seed: int, abstention_categories: Sequence[str]) -> list[Probe]:
    """Up to ``n`` known-correct and ``n`` known-wrong probes (seeded), in item order.

    Items come from a seeded sample of the eligible ones; an item whose category holds no
    other gold answer gets no known-wrong probe.
    """
    eligible = [
        item for item in dataset.items()
        if item.answer and item.answer.strip()
        and not is_abstention(item, dataset.categories.get(item.category, item.category), abstention_categories)
    ]
    by_category: dict[str, list[Item]] = defaultdict(list)
    for item in eligible:
        by_category[item.category].append(item)
    rng = random.Random(seed)
    chosen = rng.sample(eligible, min(n, len(eligible)))
    probes: list[Probe] = []
    for item in chosen:
        label = dataset.categories.get(item.category, item.category)
        probes.append(Probe(item, label, phrase(item.answer or ""), True))
        own = squad_normalize(item.answer or "")
        others = [o for o in by_category[item.category] if squad_normalize(o.answer or "") != own]
        if others:
            probes.append(Probe(item, label, phrase(rng.choice(others).answer or ""), False))
    return probes


async def grade_probes(
    judge: Judge, probes: Sequence[Probe], on_done: Callable[[], None] = lambda: None
) -> list[str]:
    """The judge's label for each probe (``error`` for a failed call), in probe order."""

    async def one(probe: Probe) -> str:
        case = Case(item=probe.item, category_label=probe.category_label, answer=probe.answer, gold=probe.item.answer)
        try:
            label = (await judge.grade(case, 0)).label
        except CallError:
            label = ERROR
        on_done()
        return label

    return list(await asyncio.gather(*(one(p) for p in probes)))


def calibration_from(probes: Sequence[Probe], labels: Sequence[str]) -> tuple[JudgeCalibration, dict[str, Any]]:
    """TPR/FPR over the probes that were graded, plus counts (``n_errors``, ...).

    Raises ValueError when no known-correct or no known-wrong probe was graded.
    """
    pos = [lab for p, lab in zip(probes, labels) if p.positive and lab != ERROR]
    neg = [lab for p, lab in zip(probes, labels) if not p.positive and lab != ERROR]
    if not pos or not neg:
        raise ValueError(f"graded {len(pos)} known-correct and {len(neg)} known-wrong probes; both must be >= 1")
    calibration = JudgeCalibration(
        tpr=sum(lab == CORRECT for lab in pos) / len(pos),
        fpr=sum(lab == CORRECT for lab in neg) / len(neg),
        n_pos=len(pos),
        n_neg=len(neg),
    )
    return calibration, {"n_probes": len(probes), "n_errors": sum(lab == ERROR for lab in labels)}
