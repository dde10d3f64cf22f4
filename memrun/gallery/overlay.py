"""A run beside the gallery's published numbers for the same benchmark and metric (``memrun
report``, ``memrun view``: the run page, and the compare page with both runs' numbers).

For each gallery entry of the run's benchmark with a value whose metric the run's
``summary.json`` reports (``recall@5``, ``session_recall@10``, ``gold_share@10``, ...), one
row: the published number with its source, the run's number, and whether the run was made
with the entry's settings (each ``key=value`` override compared with the run's recorded
config; the ones that differ are named, so a reader sees a number measured otherwise is
not a reproduction).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrun.benchmarks.selection import selection_from_config
from memrun.core.instrument import Instrument
from memrun.gallery.entries import FILES, Entry, load_entries
from memrun.metrics.retrieval import SESSION_PREFIX


def summary_value(summary: Mapping[str, Any], metric: str) -> float | None:
    """The run-level ``metric`` from a retrieval summary (``overall_all``, or the session
    block's for a ``session_`` metric); None when the summary has none."""
    block = summary.get("overall_all") or {}
    name = metric
    if metric.startswith(SESSION_PREFIX):
        block, name = ((summary.get("session") or {}).get("overall_all") or {}), metric[len(SESSION_PREFIX):]
    value = block.get(name)
    return float(value) if isinstance(value, (int, float)) else None


def _configured(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def setting_differences(entry: Entry, inst: Instrument) -> list[str]:
    """The entry's overrides the run was not made with, as ``key=entry's (run: run's)``."""
    out = []
    for override in entry.overrides:
        key, _, want = override.replace("{files}", str(FILES)).partition("=")
        if key == "benchmark.path":  # where the file lies, not what it holds (the dataset's sha256 says that)
            continue
        if len(want) >= 2 and want[0] == want[-1] and want[0] in "'\"":  # a quoted Hydra value: its text
            want = want[1:-1]
        if key == "benchmark":
            have: Any = inst.benchmark
        elif key == "arm":
            have = inst.arm
        elif key.startswith("benchmark.slice."):  # an id list is compared by what it selects, not its path
            have = inst.slice
            want = str(selection_from_config({"slice": {key.rpartition(".")[2]: want}}).describe())
        elif "/" in key:  # a config group inside a group (arm/embedder): read the embedder field instead
            continue
        else:
            have = _configured(inst.config, key)
        if str(have) != want:
            out.append(f"{key}={want} (run: {have})")
    return out


def published_beside(inst: Instrument, summary: Mapping[str, Any],
                     entries: list[Entry] | None = None) -> list[dict[str, Any]]:
    """Rows for the overlay (see the module docstring): entry, title, source, metric,
    published, run (the run's value), same_setting, differences."""
    if inst.axis != "recall":
        return []
    rows = []
    for entry in entries if entries is not None else load_entries():
        if entry.benchmark != inst.benchmark or entry.kind != "run":
            continue
        for value in entry.values:
            mine = summary_value(summary, value.metric)
            if mine is None:
                continue
            differences = setting_differences(entry, inst)
            source = "; ".join(p for p in (entry.source.get("publisher"), entry.source.get("where"),
                                           entry.source.get("version")) if p)
            rows.append({"entry": entry.name, "title": entry.title, "source": source, "metric": value.metric,
                         "published": value.published, "run": mine, "same_setting": not differences,
                         "differences": differences,
                         "convention": "items without gold counted 1 by the publisher" if entry.credit_absent else ""})
    return rows


def published_beside_pair(a: tuple[Instrument, Mapping[str, Any]], b: tuple[Instrument, Mapping[str, Any]],
                          entries: list[Entry] | None = None) -> list[dict[str, Any]]:
    """The compare page's overlay: one row per published value that run A or run B reports
    (:func:`published_beside` of each, joined on entry and metric): ``a`` and ``b`` (None when
    that run has no such number), ``a_differences`` / ``b_differences`` (the entry's settings
    each run was not made with, None when it has no number), and the entry's source."""
    entries = entries if entries is not None else load_entries()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for side, (inst, summary) in (("a", a), ("b", b)):
        for row in published_beside(inst, summary, entries):
            joined = rows.setdefault((row["entry"], row["metric"]), {
                **{k: row[k] for k in ("entry", "title", "source", "metric", "published", "convention")},
                "a": None, "b": None, "a_differences": None, "b_differences": None})
            joined[side], joined[f"{side}_differences"] = row["run"], row["differences"]
    return list(rows.values())
