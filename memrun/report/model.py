"""The summary model every renderer reads: one place computes, several render.

The terminal tables (:mod:`memrun.report.run_summary`, :mod:`memrun.report.accuracy_summary`),
``memrun sweep`` (:mod:`memrun.jobs.sweep`) and ``memrun report`` (:mod:`memrun.report.html`)
take a run's slices, its headline and its per-category intervals from here, read off a
``summary.json`` dict (:func:`memrun.metrics.run_level.summarize_rows` made it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memrun.metrics.intervals import RETRIEVAL_HEADLINE
from memrun.stats.verdict import too_few_clusters


@dataclass(frozen=True)
class Slice:
    """One row of a summary table: ``name`` (a category shows ``"<raw> <label>"``),
    ``key`` (``overall_all``, ``overall_comparable``, ``task_averaged`` or the raw
    category), its metric ``block`` and whether it is an overall row (``bold``)."""

    name: str
    key: str
    block: Mapping[str, Any]
    bold: bool


def slices(summary: Mapping[str, Any]) -> list[Slice]:
    """The rows of a run's summary table, in order: overall_comparable (when the
    benchmark has a comparable subset), overall_all, task_averaged (when reported), then
    each category."""
    out = []
    if "overall_comparable" in summary:
        out.append(Slice("overall_comparable", "overall_comparable", summary["overall_comparable"], True))
    out.append(Slice("overall_all", "overall_all", summary["overall_all"], True))
    if "task_averaged" in summary:
        averaged = summary["task_averaged"]
        out.append(Slice("task_averaged", "task_averaged", {**averaged, "n_scored": f"{averaged['n_categories']} cat."},
                         True))
    for cat, block in summary["per_category"].items():
        out.append(Slice(f"{cat} {block['label']}" if block["label"] != cat else cat, cat, block, False))
    return out


def headline(summary: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """(metric name, value as a fraction) of a run's ``summary.json``; (None, None) when it has none.

    Accuracy axis: the denominator verdicts read; retrieval: the first of
    :data:`memrun.metrics.intervals.RETRIEVAL_HEADLINE` the run has.
    """
    head = summary.get("headline")
    if isinstance(head, dict) and "value" in head:
        return str(head.get("metric")), head.get("value")
    block = summary.get("overall_comparable") or summary.get("overall_all") or {}
    for name in RETRIEVAL_HEADLINE:
        if block.get(name) is not None:
            return name, float(block[name])
    return None, None


def headline_scope(summary: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """(the slice the headline value of :func:`headline` is over, the items it averages) of a
    run's ``summary.json``: ``overall_comparable`` when the run has it (LoCoMo's categories 1-4,
    1,536 of its 1,986 questions), else ``overall_all``; the count is the items that slice's
    headline interval averages (scored, not errored), else the slice's ``n_scored`` or
    ``n_items``. (None, None) without a headline."""
    name, _ = headline(summary)
    if name is None:
        return None, None
    head = summary.get("headline")
    key = str(head["slice"]) if isinstance(head, dict) and head.get("slice") else (
        "overall_comparable" if summary.get("overall_comparable") else "overall_all")
    intervals = summary.get("intervals") or {}
    block = intervals.get(key) if intervals.get("metric") == name else None
    if isinstance(block, dict) and block.get("n_items") is not None:
        return key, int(block["n_items"])
    figures = summary.get(key)
    n = figures.get("n_scored", figures.get("n_items")) if isinstance(figures, dict) else None
    return key, None if n is None else int(n)


def error_count(summary: Mapping[str, Any]) -> int | None:
    """The items a run's ``summary.json`` left out of its figures because they errored: on
    the retrieval axis ``n_errors`` (one row an item), on the accuracy axis the items whose
    majority label is an error (``overall_all.errors``; ``n_row_errors`` counts rows, each
    repeat apart). None for a summary without either (a job that wrote none)."""
    if summary.get("n_errors") is not None:
        return int(summary["n_errors"])
    overall = summary.get("overall_all")
    if isinstance(overall, Mapping) and overall.get("errors") is not None:
        return int(overall["errors"])
    return None


def shown_interval(block: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    """(low, high) of an interval block of ``summary["intervals"]``, or (None, None) when
    there is none or it cannot be read: its ``unreadable`` reason is set
    (:mod:`memrun.stats.mean_interval`), or it rests on fewer than
    :data:`memrun.stats.verdict.MIN_CLUSTERS` clusters (a summary written before the reason
    was recorded: one cluster is redrawn whole, a second one of a single item made a
    150-item conversation's bootstrap read [44%, 100%]). Such an interval is never shown, as
    a headline or anywhere else. A block without ``n_clusters`` (older still) is shown as it is."""
    if not block or block.get("low") is None or why_no_interval(block):
        return None, None
    return block.get("low"), block.get("high")


def why_no_interval(block: Mapping[str, Any] | None) -> str | None:
    """Why :func:`shown_interval` shows no interval for a recorded ``block`` (its
    ``unreadable`` reason, or too few clusters), or None when it shows one or none was recorded."""
    if not block:
        return None
    if block.get("unreadable"):
        return str(block["unreadable"])
    return too_few_clusters(block.get("n_clusters"))


def headline_interval(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The interval block of the headline slice (``overall_comparable``, else ``overall_all``)."""
    block = summary.get("intervals") or {}
    return block.get("overall_comparable") or block.get("overall_all")


def interval_bars(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The headline metric's mean and 95% interval per slice: ``{name, value, low, high, n}``
    (fractions; low/high None for a run summarised before intervals were recorded, or an
    interval that cannot be read: :func:`shown_interval`)."""
    intervals = summary.get("intervals") or {}
    metric = intervals.get("metric") or headline(summary)[0]
    bars = []
    for s in slices(summary):
        if s.key == "task_averaged":
            continue
        where = intervals.get(s.key) if s.bold else (intervals.get("per_category") or {}).get(s.key)
        value = where["mean"] if where else s.block.get(metric) if metric else None
        n = where["n_items"] if where else s.block.get("n_scored", s.block.get("n_items"))
        low, high = shown_interval(where)
        bars.append({"name": s.name, "value": value, "low": low, "high": high, "n": n})
    return bars


@dataclass
class SweepRow:
    """One job of a sweep. ``headline``/``value``: the metric the table shows
    (:func:`memrun.report.model.headline`)
    as a fraction, None when the job wrote no summary. ``headline_slice``/``headline_items``:
    the slice and the number of items that value is over (:func:`headline_scope`), which
    may be fewer than the run's ``n_items`` (LoCoMo: categories 1-4)."""

    job: int
    overrides: str
    status: str
    exit_code: int
    headline: str | None
    value: float | None
    n_items: int | None
    n_errors: int | None
    seconds: float | None
    run_dir: str
    error: str | None
    headline_slice: str | None = None
    headline_items: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def run_labels(instruments: Sequence[Any]) -> list[str]:
    """A label per run for a chart: its arm and the configuration keys on which the runs
    differ (:meth:`memrun.core.instrument.Instrument.configuration_diff` against the first run;
    ``arm.`` dropped from the keys), e.g. ``bm25 k1=1.2``; runs still alike get their start
    time. Never a path."""
    skip = ("arm", "arm.name")  # the arm is named anyway
    diffs: list[dict[str, tuple[Any, Any]]] = [{}] + [
        {k: (a, b) for k, a, b in instruments[0].configuration_diff(inst) if k not in skip} for inst in instruments[1:]]
    keys = list(dict.fromkeys(k for d in diffs for k in d))
    first = {k: next(d[k][0] for d in diffs if k in d) for k in keys}  # the first run's value
    labels = [" ".join([str(inst.arm), *(f"{k.removeprefix('arm.')}={diffs[i][k][1] if k in diffs[i] else first[k]}"
                                          for k in keys)]) for i, inst in enumerate(instruments)]
    if len(set(labels)) < len(labels):
        labels = [f"{label} ({str(inst.started_at or inst.run_id or i)[:19]})"
                  for i, (label, inst) in enumerate(zip(labels, instruments))]
    return labels
