"""The run page of ``memrun report RUN``: instrument, headline, per-category intervals,
distributions and every item, filterable."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from memrun.core.instrument import Instrument
from memrun.core.status import MAX_ERROR_SHARE
from memrun.gallery.overlay import published_beside
from memrun.io.live import progress_text, read_live
from memrun.io.reader import RunTable, read_run, read_summary
from memrun.io.writer import SUMMARY_FILE
from memrun.lazy import lazy
from memrun.metrics.intervals import retrieval_headline_metric
from memrun.metrics.retrieval import item_column_for
from memrun.pipeline import resume
from memrun.report import model, svg
from memrun.report.evidence import FOLD_CHARS
from memrun.report.html.common import Texts, column_values, embed_json, group_repeats, item_rows, render
from memrun.report.run_summary import caveat_lines

if TYPE_CHECKING:
    from memrun.metrics import run_level as metrics_run_level
else:
    metrics_run_level = lazy("memrun.metrics.run_level")

INSTRUMENT_FIELDS = ("run_id", "benchmark", "split", "slice", "arm", "axis", "search_mode", "embedder",
                     "reader_model", "judge_model", "denominator", "dataset_sha256", "git_commit", "memrun_version",
                     "memrun_commit", "status", "started_at", "finished_at")


def load_summary(run: RunTable) -> tuple[dict[str, Any], str | None]:
    """(summary, note): the run's ``summary.json``, or the metrics recomputed from its rows
    (:func:`memrun.metrics.run_level.summarize_rows`) when there is none, with a note saying so."""
    if (summary := read_summary(run.folder)) is not None:
        return summary, None

    inst = run.instrument
    rows = run.table.to_pylist()
    if not rows:
        return {"overall_all": {}, "per_category": {}}, "no summary.json and no rows: nothing to summarize"
    denominator = (inst.config or {}).get("denominator") or "accuracy_abstain_wrong"
    summary = metrics_run_level.summarize_rows(
        rows, axis=str(inst.axis), ks=inst.ks, categories=inst.categories,
        comparable_categories=inst.comparable_categories, task_averaged=inst.task_averaged,
        headline=denominator, unmeasurable=inst.retrieval_not_measurable,
        max_error_share=float((inst.config or {}).get("max_error_share", MAX_ERROR_SHARE)), top_k=inst.top_k)
    return summary, f"no {SUMMARY_FILE}: the figures below were recomputed from the {len(rows)} rows it wrote"


def status_notes(run: RunTable, summary: Mapping[str, Any], note: str | None,
                 live: Mapping[str, Any] | None = None, resumed_by: str | None = None) -> list[str]:
    """What a reader must see first: a running, unfinished, interrupted (or resumed), partial,
    one shard's or fake run (``live``: the run's live state, :func:`memrun.io.live.read_live`;
    ``resumed_by``: the run that took an unfinished run's rows over,
    :func:`memrun.pipeline.resume.taken_over_by`)."""
    inst, notes = run.instrument, []
    if not run.complete and live is not None and live.get("running"):
        notes.append(f"RUNNING: {progress_text(dict(live))}; every figure covers the {run.table.num_rows} rows "
                     "written so far.")
    elif not run.complete and resumed_by is not None:
        notes.append(f"RESUMED: this run did not finish, and the run in {resumed_by} took its rows over and went on; "
                     f"that run holds the figures. These cover the {run.table.num_rows} rows written here.")
    elif not run.complete:
        notes.append(f"INTERRUPTED: this run did not finish; read from items.parts/ ({run.table.num_rows} rows "
                     "written). Every figure covers those rows only.")
    elif inst.status != "complete":
        missing = (inst.shard or {}).get("missing")
        extra = f" (shards {', '.join(map(str, missing))} missing)" if missing else ""
        why = f" ({inst.error})" if inst.error else ""
        notes.append(f"{inst.status.upper()}: this run ended {inst.status}{extra}{why}; figures cover the rows it wrote.")
    if run.lone_shard:
        notes.append(f"SHARD: this run is {run.lone_shard} of a run, not the whole run; figures cover its "
                     "items only (memrun merge the shards' folder for the whole).")
    if summary.get("stopped"):
        notes.append(f"STOPPED early: {summary['stopped']}")
    head = summary.get("headline") or {}
    if head.get("partial"):
        notes.append("PARTIAL: the arm answered fewer items than min_coverage; the unanswered items are errors.")
    if inst.fake_providers or summary.get("fake_providers"):
        notes.append("FAKE PROVIDERS: a reader or judge is a fake/stub; these scores measure nothing.")
    if inst.retrieval_not_measurable:
        notes.append(f"NOT MEASURABLE: {inst.retrieval_not_measurable}")
    if note:
        notes.append(note)
    return notes


def instrument_rows(inst: Instrument) -> list[tuple[str, str]]:
    """(field, value) for the page's instrument table; unset fields show ``-``."""
    return [(name, "-" if getattr(inst, name) in (None, "") else str(getattr(inst, name)))
            for name in INSTRUMENT_FIELDS]


def headline_text(summary: Mapping[str, Any], axis: str | None) -> str:
    """The MemScore line (accuracy / p50 search ms / context tokens) or the retrieval headline."""
    if axis == "accuracy" and summary.get("score"):
        return f"MemScore {summary['score']}  (accuracy / search latency p50 / context tokens)"
    name, value = model.headline(summary)
    if name is None or value is None:
        return "no headline: nothing was scored"
    where = model.headline_interval(summary)
    low, high = model.shown_interval(where)
    interval = ""
    if low is not None and high is not None and name != "mrr":
        interval = f" [{100 * low:.1f}, {100 * high:.1f}] 95%"
    elif (why := model.why_no_interval(where)) is not None:
        interval = f" (no interval: {why})"
    slice_ = "overall_comparable" if "overall_comparable" in summary else "overall_all"
    shown = f"{value:.3f}" if name == "mrr" else f"{100 * value:.1f}%"
    latency = (summary.get("search_latency_ms") or {}).get("p50")
    ms = "" if latency is None else f" | search p50 {latency:.2f} ms"
    return f"{name} {shown}{interval} on {slice_}{ms}"


def run_context(path: str | Path, item_link: str | None = None) -> dict[str, Any]:
    """Everything the run template needs, from a run folder or items.parquet.

    Items are one row each, their repeats inside (:func:`group_repeats`). item_link: a URL
    prefix the item id is appended to (``memrun view``'s drill-down), None for none."""
    run = read_run(path)
    summary, note = load_summary(run)
    inst = run.instrument
    live = None if run.complete else read_live(run.folder)
    accuracy = inst.axis == "accuracy"
    metric = (summary.get("intervals") or {}).get("metric") or (
        None if accuracy else retrieval_headline_metric(inst.ks or [5], inst.top_k))
    hit_column = None
    if not accuracy and metric:
        hit_column = item_column_for(metric)
    texts = Texts()
    rows = group_repeats(item_rows(run, hit_column=hit_column, texts=texts), accuracy)
    repeated = any("reps" in r for r in rows)
    if item_link is not None:
        for r in rows:
            r["open"] = item_link + quote(str(r["id"]), safe="")
    bars = model.interval_bars(summary) if summary.get("per_category") is not None else []
    scale_unit = "score" if metric == "mrr" else "%"
    charts = [svg.histogram(column_values(run, "search_latency_ms"), title="search latency", unit="ms")]
    if accuracy:
        charts += [svg.histogram(column_values(run, "answer_latency_ms"), title="answer latency", unit="ms"),
                   svg.histogram(column_values(run, "context_tokens"), title="context tokens", unit="tok")]
    table = {
        "columns": ([["open", "", "link", "open"]] if item_link is not None else [])
                   + ([["id", "item"], ["cat", "category"], ["q", "question"], ["gold", "gold"]]
                    + ([["ans", "answer"]] if accuracy else []) + [["label", "majority label" if repeated else "label", "label"]]
                    + ([["votes", "repeats"]] if repeated else [])
                    + ([["stage", "failure stage"], ["expl", "judge explanation"]] if accuracy
                       else [["rank", "rank", "num"]])
                    + [["keys", "retrieved (gold in bold)", "keys"]]),
        "filters": [["cat", "category"], ["label", "label"]] + ([["stage", "failure stage"]] if accuracy else []),
        "detail": [["q", "question"], ["gold", "gold"], ["ans", "answer"], ["expl", "judge explanation"],
                   ["reps", "repeats", "repeats"],
                   ["err", "error"], ["rank", "first gold rank"],
                   ["gtexts", "gold records"] if any(r["gtexts"] for r in rows) else ["gkeys", "gold records"],
                   ["texts", "retrieved (gold in bold)"] if any(r["texts"] for r in rows)
                   else ["keys", "retrieved keys, in rank order (gold in bold)"]],
        "fold": FOLD_CHARS,
        "search": ["id", "cat", "q", "gold", "ans", "expl", "err", "keys"],
        "page": 50,
    }
    return {
        "title": f"memrun report: {inst.benchmark} x {inst.arm} ({inst.axis})",
        "notes": status_notes(run, summary, note, live, None if run.complete else resume.taken_over_by(run.folder)),
        "running": bool(live and live.get("running")),
        "instrument": instrument_rows(inst),
        "warnings": list(summary.get("warnings") or inst.warnings or []),
        "caveats": caveat_lines(summary),  # credited by convention, unreachable, empty searches, judge retries
        "headline": headline_text(summary, inst.axis),
        "metric": metric,
        "bars": svg.interval_bars(bars, unit=scale_unit) if bars else "",
        "summary_rows": summary_table(summary, accuracy),
        "judge2": judge2_rows(summary, inst),
        "published": published_beside(inst, summary),
        "charts": charts,
        "n_rows": len(rows),
        "table": embed_json(table),
        "rows": embed_json(rows),
        "texts": embed_json(texts.strings),
    }


def judge2_rows(summary: Mapping[str, Any], inst: Instrument) -> list[tuple[str, str]]:
    """The second judge's figures from ``summary.json``'s ``judge2`` block: its model, rows
    compared of those it graded and why the others were not (each judge's errors), raw
    agreement and Cohen's kappa (``-`` when undefined: one label only), or why they are
    withheld (:func:`memrun.metrics.accuracy.judge2_block`); empty when the run had no second judge."""
    block = summary.get("judge2")
    if not block:
        return []
    kappa = block.get("cohen_kappa")
    agreement = block.get("agreement")
    rows = [("second judge", str(inst.judge2_model or "-")),
            ("rows compared", f"{block.get('n_compared', '-')} of {block.get('n_rows', '-')}"
                              f" ({block.get('n_errors', 0)} errored in the second judge, "
                              f"{block.get('n_first_judge_errors', 0)} in the first)")]
    if block.get("withheld"):
        return [*rows, ("agreement", f"not reported: {block['withheld']}")]
    return [*rows, ("agreement", "-" if agreement is None else f"{100 * agreement:.1f}%"),
            ("Cohen's kappa", "- (undefined: the judges used one label only)" if kappa is None else f"{kappa:.3f}")]


def summary_table(summary: Mapping[str, Any], accuracy: bool) -> dict[str, Any]:
    """Header and rows of the page's summary table (the terminal table's slices)."""
    if not summary.get("per_category") and not summary.get("overall_all"):
        return {"header": [], "rows": []}
    if accuracy:
        cols = ["n_items", "correct", "wrong", "abstained", "errors", "accuracy", "accuracy_abstain_wrong", "flip_rate"]
    else:
        block = summary.get("overall_all") or {}
        cols = ["n_scored"] + [k for k in block if "@" in k and not k.startswith(("precision", "rank"))] + ["mrr"]
    rows = []
    for s in model.slices(summary):
        cells = []
        for c in cols:
            v = s.block.get(c)
            ratio = isinstance(v, float) and c not in ("n_items", "n_scored")
            cells.append("-" if v is None else f"{100 * v:.1f}" if ratio else str(v))
        rows.append({"name": s.name, "bold": s.bold, "cells": cells})
    return {"header": cols, "rows": rows}


def render_run(path: str | Path) -> str:
    """The run page as one HTML string."""
    return render("run.html.j2", **run_context(path))
