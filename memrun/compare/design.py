"""What a comparison's design lets its interval say (LongMemEval and other stratified runs).

- Item-level clusters within design strata (LongMemEval: each question its own cluster,
  stratified by question type) make an interval for *these* questions with *these* type
  counts, not for a new draw of questions: said beside the interval.
- Questions sharing evidence sessions are correlated; ``--cluster-by evidence`` clusters
  them (:func:`memrun.compare.pairing.evidence_clusters`) and, by default, the interval
  under that clustering is printed beside the item-level one (the sensitivity).
- A task-averaged headline (the mean over categories) is another estimand than the
  item-weighted mean the gate reads: both are printed, the one the verdict reads named.
"""

from __future__ import annotations

import numpy as np

from memrun.compare.analysis import Comparison, Settings
from memrun.compare.pairing import EVIDENCE, pair, read_for_compare
from memrun.errors import MemrunError
from memrun.instrument import Instrument
from memrun.stats.gate import gate_interval


def design_notes(result: Comparison, instrument: Instrument, stratify_by: str | None) -> list[str]:
    """What the interval is valid for (item-level clusters within strata) and which
    estimand the verdict reads when the run's headline is task-averaged."""
    notes = []
    o = result.overall
    if stratify_by and o["n_clusters"] == o["n_items"]:
        notes.append(f"items are their own clusters, stratified by {stratify_by}: the interval holds for these "
                     f"questions with these {stratify_by} counts, not for a new draw of questions; questions that "
                     "share evidence sessions are correlated (--cluster-by evidence shows how much that matters)")
    if instrument.task_averaged and result.per_category:
        deltas = [blk["delta"] for blk in result.per_category.values()]
        task = sum(deltas) / len(deltas)
        result.estimands = {"item_weighted": o["delta"], "task_averaged": task, "verdict_reads": "item_weighted"}
        notes.append(f"the runs' headline is task-averaged (mean over {len(deltas)} categories): B - A "
                     f"{100 * task:+.2f} pp task-averaged, {100 * o['delta']:+.2f} pp item-weighted; the verdict "
                     "reads the item-weighted mean")
    return notes


def evidence_sensitivity(paths: tuple[str, str], metric: str, settings: Settings, categories: list[str] | None,
                         result: Comparison) -> list[str]:
    """The same comparison clustered by shared evidence session (no strata: a group of
    questions may span types), printed beside the item-level interval; nothing when the
    runs hold no gold sessions."""
    axis = result.axis
    try:
        runs = [read_for_compare(p, axis, metric, EVIDENCE, None) for p in paths]
        paired = pair(*runs, metric=metric, cluster_by=EVIDENCE, categories=categories)
    except MemrunError:
        return []
    if paired.clusters is None or len(np.unique(paired.clusters)) == paired.n:
        return []  # no two questions share an evidence session: nothing changes
    gate = gate_interval(paired.b - paired.a, paired.clusters, resamples=settings.resamples, seed=settings.seed)
    o = result.overall
    return [f"sensitivity: clustered by shared evidence session ({gate.bootstrap.n_clusters} clusters of "
            f"{paired.n} items) B - A [{100 * gate.low:+.2f}, {100 * gate.high:+.2f}] pp, against "
            f"[{100 * o['low']:+.2f}, {100 * o['high']:+.2f}] pp with item clusters; a wider interval here means the "
            "item-level one is too narrow (--cluster-by evidence gates on it)"]
