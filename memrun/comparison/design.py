"""What a comparison's design lets its interval say (LongMemEval and other stratified runs).

- Item-level clusters within design strata (LongMemEval: each question its own cluster,
  stratified by question type) make an interval for *these* questions with *these* type
  counts, not for a new draw of questions: said beside the interval.
- Questions sharing evidence sessions are correlated: when item-level clusters hold
  questions that share a gold session, the gate reads the wider of the item-level
  interval and the one clustered by shared evidence
  (:func:`memrun.comparison.pairing.shared_evidence`, :func:`memrun.stats.gate.gate_interval`),
  and both are printed (the sensitivity); ``--cluster-by evidence`` reads only the latter.
- A task-averaged headline (the mean over categories) is another estimand than the
  item-weighted mean the gate reads: both are printed, the one the verdict reads named.
- A benchmark with a fixed supply of clusters (LoCoMo's published file: 10
  conversations) cannot give the clusters the power line may ask for: said there
  (:func:`cluster_supply`).
"""

from __future__ import annotations

from memrun.comparison.analysis import Comparison
from memrun.core.instrument import Instrument
from memrun.stats.gate import EVIDENCE


def design_notes(result: Comparison, instrument: Instrument, stratify_by: str | None) -> list[str]:
    """What the interval is valid for (item-level clusters within strata) and which
    estimand the verdict reads when the run's headline is task-averaged."""
    notes = []
    o = result.overall
    given = o["other"] if o.get("clustering") == EVIDENCE else o
    if stratify_by and given["n_clusters"] == o["n_items"]:
        shared = ("some share a gold session, so the gate also reads them clustered by shared evidence"
                  if o.get("other") else "no two of them share a gold session here")
        notes.append(f"items are their own clusters, stratified by {stratify_by}: the interval holds for these "
                     f"questions with these {stratify_by} counts, not for a new draw of questions; questions that "
                     f"share evidence sessions are correlated ({shared})")
    if instrument.task_averaged and result.per_category:
        deltas = [blk["delta"] for blk in result.per_category.values()]
        task = sum(deltas) / len(deltas)
        result.estimands = {"item_weighted": o["delta"], "task_averaged": task, "verdict_reads": "item_weighted"}
        notes.append(f"the runs' headline is task-averaged (mean over {len(deltas)} categories): B - A "
                     f"{100 * task:+.2f} pp task-averaged, {100 * o['delta']:+.2f} pp item-weighted; the verdict "
                     "reads the item-weighted mean")
    return notes


def evidence_sensitivity(result: Comparison) -> list[str]:
    """The overall interval under the other clustering (item clusters against clusters of
    shared evidence session), and which one the gate read (the wider,
    :func:`memrun.stats.gate.gate_interval`); nothing when only one clustering was read."""
    o = result.overall
    other = o.get("other")
    if not other:
        return []
    ev, items = (o, other) if o["clustering"] == EVIDENCE else (other, o)
    read = "clustered by shared evidence" if o["clustering"] == EVIDENCE else "with item clusters"
    unread = f" ({other['degenerate']})" if other.get("degenerate") else ""
    return [f"sensitivity: clustered by shared evidence session ({ev['n_clusters']} clusters of {o['n_items']} "
            f"items) B - A [{100 * ev['low']:+.2f}, {100 * ev['high']:+.2f}] pp, against "
            f"[{100 * items['low']:+.2f}, {100 * items['high']:+.2f}] pp with item clusters{unread}; the gate reads "
            f"the wider, {read}: questions that share evidence are not independent"]


PUBLISHED_CLUSTERS: dict[tuple[str | None, str | None], tuple[int, str]] = {("locomo", "locomo10"): (10, "conversations")}
"""(benchmark, split) -> (clusters its published data holds, what they are): the most any
comparison on it can resample when it clusters by the benchmark's cluster key."""


def cluster_supply(result: Comparison, instrument: Instrument) -> None:
    """Add ``available`` (the clusters the benchmark has) and ``available_what`` to the
    power dict of a comparison clustered by the benchmark's own key on a benchmark with a
    fixed supply (:data:`PUBLISHED_CLUSTERS`); the power line then says when an effect
    needs more clusters than exist."""
    supply = PUBLISHED_CLUSTERS.get((instrument.benchmark, instrument.split))
    p = result.power
    o = result.overall
    by_key = result.settings.cluster_by == "cluster" and o.get("clustering") != EVIDENCE
    if supply and p and p["units"] == "clusters" and by_key and o["n_clusters"] <= supply[0]:
        p["available"], p["available_what"] = supply
        p["benchmark"] = instrument.benchmark
