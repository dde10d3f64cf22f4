"""Run-level summary of a retrieval run, from its per-item rows (no printing here)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from typing import Any

from memrun.metrics.columns import column, columns
from memrun.metrics.retrieval import aggregate

Row = Mapping[str, Any]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, linear interpolation) of ``values``, None when empty; NaN
    when a value is NaN. Raises ValueError for q outside [0, 100].

    The very float ``np.percentile`` gives (its default ``linear`` method, step by step:
    the virtual index ``(n - 1) * q / 100``, its floor and the next rank, the last value
    from the last index on, and numpy's two-sided lerp), computed in Python: numpy's
    ``linear`` path calls ``np.unique``, whose first call in a process imports ``numpy.ma``
    (~50 ms of a run's summary, for two medians).
    """
    return percentiles(values, (q,))[0]


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float | None]:
    """:func:`percentile` of ``values`` at each of ``qs`` (0-100), in order, from one sorted
    copy (a summary reads p50 and p95 of each latency). Raises ValueError for a q outside
    [0, 100]."""
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError(f"percentile q={q} is outside [0, 100]")
    if not len(values):
        return [None for _ in qs]
    data = list(map(float, values))
    if any(map(math.isnan, data)):
        return [math.nan for _ in qs]
    data.sort()
    return [_interpolate(data, q) for q in qs]


def _interpolate(data: list[float], q: float) -> float:
    """numpy's ``linear`` percentile of sorted, non-empty ``data`` (:func:`percentile`)."""
    n = len(data)
    virtual = (n - 1) * (q / 100)
    below = math.floor(virtual)
    if virtual >= n - 1:  # at or past the last rank: the last value
        below, above = -1, -1
    else:
        above = below + 1
    a, b = data[below], data[above]
    t = virtual - below
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def summarize_retrieval(
    rows: Sequence[Row],
    *,
    ks: Iterable[int],
    categories: Mapping[str, str],
    comparable_categories: Sequence[str] | None,
    prefix: str = "",
) -> dict[str, Any]:
    """Summary of a retrieval run.

    rows: per-item rows (columns of :mod:`memrun.io.schema`), repeat 0 only.
    prefix: the gold granularity's column prefix (``""`` records, ``"session_"``).
    Returns counts (``n_items``, ``n_errors`` excluded from every metric, ``n_unscored``
    items without retrieval gold), ``overall_all`` over every scored item,
    ``overall_comparable`` over ``comparable_categories`` (when given: LoCoMo's
    published column, categories 1-4), ``per_category`` keyed on the raw category with
    its label, and search latency p50/p95 in ms over items that did not error.
    """
    ks = tuple(ks)
    read = columns(rows, ("error", "category"))
    is_ok = [e is None for e in read["error"]]
    ok = list(compress(rows, is_ok))
    ok_categories = list(compress(read["category"], is_ok))
    overall = aggregate(ok, ks, prefix)

    def of(part: list[Row]) -> dict[str, Any]:
        # a slice holding every ok row (one category; every category comparable) has overall's figures
        return dict(overall) if len(part) == len(ok) else aggregate(part, ks, prefix)

    summary: dict[str, Any] = {
        "n_items": len(rows),
        "n_errors": len(rows) - len(ok),
        "n_unscored": sum(v is None for v in column(ok, f"{prefix}rr")),
        "overall_all": overall,
    }
    if comparable_categories:
        keep = set(comparable_categories)
        summary["overall_comparable"] = of([r for r, c in zip(ok, ok_categories) if c in keep])
        summary["comparable_categories"] = list(comparable_categories)
    per_category: dict[str, Any] = {}
    n_items = Counter(read["category"])
    ok_rows: dict[Any, list[Row]] = {}
    for r, c in zip(ok, ok_categories):
        ok_rows.setdefault(c, []).append(r)
    # A row without a category (None) sorts by its text beside the named ones instead of failing.
    order: list[str | None] = [c for c in categories if c in n_items]
    order += sorted((c for c in n_items if c not in categories), key=str)
    for cat in order:
        per_category[str(cat)] = {
            "label": categories.get(str(cat), str(cat)),
            "n_items": n_items[cat],
            **of(ok_rows.get(cat, [])),
        }
    summary["per_category"] = per_category
    latencies = [float(v) for v in column(ok, "search_latency_ms") if v is not None]
    p50, p95 = percentiles(latencies, (50, 95))
    summary["search_latency_ms"] = {"p50": p50, "p95": p95}
    return summary


def _is_metric(name: str) -> bool:
    return name == "mrr" or "@" in name


def not_measurable(summary: dict[str, Any], reason: str) -> dict[str, Any]:
    """Void a retrieval summary whose metrics cannot be measured, in place; returns it.

    summary: as :func:`memrun.metrics.by_category.summarize_by_granularity` returns it.
    Every metric (``mrr``, ``rank@1``, ``recall@K``, ...) of every block, at every
    granularity, becomes None; counts stay; ``not_measurable`` holds ``reason``.
    """

    def void(node: Any) -> None:
        if not isinstance(node, dict):
            return
        block = "n_scored" in node or "n_categories" in node  # a block of metrics
        for key, value in node.items():
            if block and _is_metric(str(key)):
                node[key] = None
            else:
                void(value)

    void(summary)
    summary["not_measurable"] = reason
    return summary
