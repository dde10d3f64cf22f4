"""Per-category, task-averaged and overall figures, at every gold granularity (no printing).

LongMemEval's official scripts report each metric per question_type, as the mean over
the types ("task-averaged", every type weighing the same whatever its size) and over
all questions ("overall"), plus abstention accuracy over the ``_abs`` questions. This
module computes those blocks from per-item rows; :mod:`memrun.report.run_summary` and
:mod:`memrun.report.by_category` print them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrun.metrics.columns import column
from memrun.metrics.retrieval import SESSION_PREFIX
from memrun.metrics.summary import Row, summarize_retrieval

_NOT_METRICS = ("label", "n_items", "n_scored")


def category_order(cat: str) -> tuple[int, int | str]:
    """Integer categories (LoCoMo) in numeric order, then the rest alphabetically."""
    return (0, int(cat)) if cat.lstrip("-").isdigit() else (1, cat)


def raw_category(categories: Mapping[Any, Any], name: str) -> str:
    """The raw category ``name`` stands for on a command line, given a run's raw category ->
    label map: itself when it is a raw category there, else the first raw category whose label
    it is (``multi-hop`` for LoCoMo's ``1``), else ``name`` unchanged (the caller says whether
    any item has it)."""
    if name in categories:
        return name
    return next((str(raw) for raw, label in categories.items() if label == name), name)


def task_average(per_category: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Mean over categories of each metric of per-category blocks.

    per_category: category -> block of metric name -> value, with ``n_scored``.
    Categories with no scored item are left out; ``n_categories`` says how many
    counted. A metric is None when no category has a value for it.
    """
    counted = [b for b in per_category.values() if b.get("n_scored")]
    out: dict[str, Any] = {"n_categories": len(counted)}
    names = [k for k in (counted[0] if counted else {}) if k not in _NOT_METRICS]
    for name in names:
        values = [float(b[name]) for b in counted if b.get(name) is not None]
        out[name] = math.fsum(values) / len(values) if values else None
    return out


def summarize_by_granularity(
    rows: Sequence[Row],
    *,
    ks: Iterable[int],
    categories: Mapping[str, str],
    comparable_categories: Sequence[str] | None,
    task_averaged: bool,
) -> dict[str, Any]:
    """The run summary: :func:`summarize_retrieval` at record granularity, plus

    - ``task_averaged`` (when asked): :func:`task_average` of ``per_category``;
    - ``session`` (when any row was scored on session gold): ``n_unscored``,
      ``overall_all``, ``per_category`` and ``task_averaged`` at session granularity;
    - ``n_abstention``: items whose answer is to abstain (left out of retrieval
      metrics when the benchmark gives them no retrieval gold, as LongMemEval does).
    """
    ks = tuple(ks)
    summary = summarize_retrieval(rows, ks=ks, categories=categories, comparable_categories=comparable_categories)
    if task_averaged:
        summary["task_averaged"] = task_average(summary["per_category"])
    if any(v is not None for v in column(rows, f"{SESSION_PREFIX}rr")):
        block = summarize_retrieval(
            rows, ks=ks, categories=categories, comparable_categories=comparable_categories, prefix=SESSION_PREFIX
        )
        keep = ("n_unscored", "overall_all", "per_category", "overall_comparable", "comparable_categories")
        session = {k: block[k] for k in keep if k in block}
        if task_averaged:
            session["task_averaged"] = task_average(block["per_category"])
        summary["session"] = session
    summary["n_abstention"] = sum(1 for v in column(rows, "abstention") if v)
    return summary


def mean_by_category(
    rows: Sequence[Row], column: str, categories: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One per-item score column (e.g. the accuracy axis's 0/1 ``correct``) as LongMemEval reports it.

    rows: per-item rows with ``category``, ``abstention`` and ``error``; errored rows and
        rows whose ``column`` is None are left out (and counted in ``n_left_out``).
    Returns ``per_category`` (category -> ``{label, n, mean}``, abstention items counted
    in their category too), ``task_averaged`` (mean of the category means),
    ``overall`` (mean over items), ``abstention`` (``{n, mean}`` over abstention
    items) and ``n_left_out``. Means are fractions in [0, 1], None over no item.
    """
    categories = categories or {}
    scored = [r for r in rows if r.get("error") is None and r.get(column) is not None]

    def mean(values: list[float]) -> float | None:
        return math.fsum(values) / len(values) if values else None  # exact: the same in any row order

    present = {r.get("category") for r in scored}
    order = [c for c in categories if c in present] + sorted(str(c) for c in present if c not in categories)
    per_category: dict[str, dict[str, Any]] = {}
    for cat in order:
        values = [float(r[column]) for r in scored if r.get("category") == cat]
        per_category[cat] = {"label": categories.get(cat, cat), "n": len(values), "mean": mean(values)}
    abstention = [float(r[column]) for r in scored if r.get("abstention")]
    return {
        "per_category": per_category,
        "task_averaged": mean([b["mean"] for b in per_category.values()]),
        "overall": mean([float(r[column]) for r in scored]),
        "abstention": {"n": len(abstention), "mean": mean(abstention)},
        "n_left_out": len(rows) - len(scored),
    }
