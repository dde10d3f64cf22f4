"""The sweep page of ``memrun report SWEEP_DIR``: one sortable row per job, linking to
each job's own run page (written beside its rows, linked by a relative path)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.errors import MemrunError
from memrun.io.reader import read_instrument, read_summary
from memrun.lazy import lazy
from memrun.report.html.common import embed_json, render

if TYPE_CHECKING:
    from memrun.jobs import sweep as memrun_sweep
    from memrun.report import model as report_model
    from memrun.report import svg as report_svg
    from memrun.report.html import run_page as html_run_page
else:
    report_model = lazy("memrun.report.model")
    report_svg = lazy("memrun.report.svg")
    html_run_page = lazy("memrun.report.html.run_page")
    memrun_sweep = lazy("memrun.jobs.sweep")


def _series(folder: Path) -> tuple[Any, dict[str, Any]]:
    """(instrument, summary.json) of a run folder; MemrunError when it cannot be read."""
    inst = read_instrument(folder)
    summary = read_summary(folder) or {}
    return inst, summary


def arms_context(folders: Sequence[Path], names: Sequence[str], links: Sequence[str | None] | None = None,
                 *, strict: bool = True) -> dict[str, Any]:
    """The multi-arm chart's context for several runs: the headline metric's mean and 95%
    interval overall (``chart``) and per category (``small``: one small chart each), and a
    table (``arm_header``, ``arm_rows``). Runs of another benchmark, axis or metric than the
    first are refused (MemrunError naming them) when ``strict``, else left out with a note."""
    loaded, notes = [], []
    for folder, name, link in zip(folders, names, links or [None] * len(folders)):
        try:
            inst, summary = _series(folder)
        except MemrunError as exc:
            if strict:
                raise
            notes.append(f"{name}: left out ({exc})")
            continue
        bars = ({b["name"]: b for b in report_model.interval_bars(summary)}
                if summary.get("per_category") is not None else {})
        metric = (summary.get("intervals") or {}).get("metric") or report_model.headline(summary)[0]
        loaded.append((name, link, inst, metric, bars))
    if not loaded:
        raise MemrunError("none of these runs has a summary to chart")
    first = loaded[0]
    key = (first[2].benchmark, first[2].axis, first[3])
    kept = []
    for entry in loaded:
        mine = (entry[2].benchmark, entry[2].axis, entry[3])
        if mine != key:
            why = (f"{entry[0]} is benchmark={mine[0]} axis={mine[1]} metric={mine[2]}, not "
                   f"benchmark={key[0]} axis={key[1]} metric={key[2]} as {first[0]}")
            if strict:
                raise MemrunError(f"cannot chart these runs together: {why}")
            notes.append(f"left out of the chart: {why}")
            continue
        kept.append(entry)
    unit = "score" if key[2] == "mrr" else "%"
    overall = next((n for n in ("overall_comparable", "overall_all") if n in first[4]), None)
    slices = [n for n in dict.fromkeys(n for e in kept for n in e[4]) if not n.startswith("overall")]

    def point(entry: Any, where: str | None) -> dict[str, Any]:
        bar = entry[4].get(where) if where else None
        return {"name": entry[0], **({k: bar.get(k) for k in ("value", "low", "high", "n")} if bar else {"value": None})}

    chart = report_svg.arms_chart([point(e, overall) for e in kept], unit=unit, title=f"{overall or 'overall'}")
    per_slice = {c: [point(e, c) for e in kept] for c in slices}
    shared = report_svg.value_range([p for points in per_slice.values() for p in points])
    small = [report_svg.arms_chart(per_slice[c], unit=unit, width=400, title=c, domain=shared) for c in slices]

    def cell(entry: Any, where: str) -> str:
        b = entry[4].get(where)
        if not b or b.get("value") is None:
            return "-"
        if unit != "%":
            return f"{b['value']:.3f}"
        ci = f" [{100 * b['low']:.1f}, {100 * b['high']:.1f}]" if b.get("low") is not None else ""
        return f"{100 * b['value']:.1f}{ci}"
    header = ([overall] if overall else []) + slices
    return {"title": f"memrun: {len(kept)} runs of {key[0]} ({key[1]}), {key[2]}", "notes": notes, "metric": key[2],
            "chart": chart, "small": small, "arm_header": header,
            "arm_rows": [{"name": e[0], "link": e[1], "cells": [cell(e, h) for h in header]} for e in kept]}


def _job_page(run_dir: Path, name: str) -> Path | None:
    """Write a job's run page; None when the job wrote no rows (or they are unreadable)."""
    try:
        html = html_run_page.render_run(run_dir)
    except MemrunError:
        return None
    page = run_dir / name
    page.write_text(html, encoding="utf-8")
    return page


def sweep_context(sweep_dir: Path, out: Path, page_name: str) -> tuple[dict[str, Any], int]:
    """(template context, job pages written): every job's row of :func:`memrun.jobs.sweep.sweep_rows`."""
    try:
        jobs = memrun_sweep.sweep_rows(sweep_dir)
    except FileNotFoundError:
        raise MemrunError(f"{sweep_dir}: no such folder") from None
    if not jobs:
        raise MemrunError(f"{sweep_dir}: no job of a memrun sweep here (expected outputs/multirun/<time>)")
    rows: list[dict[str, Any]] = []
    written = 0
    for job in jobs:
        page = _job_page(Path(job.run_dir), page_name)
        written += page is not None
        link = Path(os.path.relpath(page, out.resolve().parent)).as_posix() if page else None
        rows.append({"job": job.job, "overrides": job.overrides, "status": job.status, "exit": job.exit_code,
                     "headline": job.headline, "value": None if job.value is None else round(100 * job.value, 2),
                     "items": job.n_items, "over": job.headline_items, "slice": job.headline_slice,
                     "errors": job.n_errors,
                     "seconds": None if job.seconds is None else round(job.seconds, 1), "link": link,
                     "error": job.error})
    notes = [f"job {r['job']} {r['status']} (exit {r['exit']}): {r['error'] or 'no error recorded'}"
             for r in rows if r["status"] != "complete"]
    arms: dict[str, Any] = {}
    common = set.intersection(*(set(job.overrides.split()) for job in jobs)) if jobs else set()
    done = [(Path(job.run_dir), " ".join([str(job.job)] + [o for o in job.overrides.split() if o not in common]),
             r["link"]) for job, r in zip(jobs, rows) if job.value is not None]
    if len(done) >= 2:
        try:
            arms = arms_context([d[0] for d in done], [d[1] for d in done], [d[2] for d in done], strict=False)
            notes += arms.pop("notes")
        except MemrunError as exc:
            notes.append(f"no chart: {exc}")
    table = {"columns": [["job", "job", "num"], ["overrides", "overrides"], ["status", "status", "label"],
                         ["exit", "exit", "num"], ["headline", "headline"], ["value", "value %", "num"],
                         ["over", "value over (items)", "num"], ["slice", "of slice"], ["items", "items", "num"], ["errors", "errors", "num"], ["seconds", "seconds", "num"],
                         ["link", "run page", "link"]],
             "filters": [["status", "status"], ["headline", "headline"]],
             "detail": [["overrides", "overrides"], ["error", "error"]], "page": 100}
    return {"title": f"memrun sweep {sweep_dir}", "notes": notes, "worst": memrun_sweep.worst_exit_code(jobs),
            "n_rows": len(rows), "rows": embed_json(rows), "table": embed_json(table), "items_title": "Jobs",
            **{k: v for k, v in arms.items() if k != "title"}}, written


def write_sweep(sweep_dir: Path, out: Path, page_name: str) -> int:
    """Write the sweep page to ``out`` and each job's run page; returns how many job pages."""
    context, written = sweep_context(sweep_dir, out, page_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render("sweep.html.j2", **context), encoding="utf-8")
    return written
