"""The sweep page of ``memrun report SWEEP_DIR``: one sortable row per job, linking to
each job's own run page (written beside its rows, linked by a relative path)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memrun.errors import MemrunError
from memrun.report.html.common import embed_json, render


def _job_page(run_dir: Path, name: str) -> Path | None:
    """Write a job's run page; None when the job wrote no rows (or they are unreadable)."""
    from memrun.report.html.run_page import render_run

    try:
        html = render_run(run_dir)
    except MemrunError:
        return None
    page = run_dir / name
    page.write_text(html, encoding="utf-8")
    return page


def sweep_context(sweep_dir: Path, out: Path, page_name: str) -> tuple[dict[str, Any], int]:
    """(template context, job pages written): every job's row of :func:`memrun.sweep.sweep_rows`."""
    from memrun.sweep import sweep_rows, worst_exit_code

    try:
        jobs = sweep_rows(sweep_dir)
    except FileNotFoundError:
        raise MemrunError(f"{sweep_dir}: no such folder") from None
    if not jobs:
        raise MemrunError(f"{sweep_dir}: no job of a memrun sweep here (expected outputs/multirun/<time>)")
    rows, written = [], 0
    for job in jobs:
        page = _job_page(Path(job.run_dir), page_name)
        written += page is not None
        link = Path(os.path.relpath(page, out.resolve().parent)).as_posix() if page else None
        rows.append({"job": job.job, "overrides": job.overrides, "status": job.status, "exit": job.exit_code,
                     "headline": job.headline, "value": None if job.value is None else round(100 * job.value, 2),
                     "items": job.n_items, "errors": job.n_errors,
                     "seconds": None if job.seconds is None else round(job.seconds, 1), "link": link,
                     "error": job.error})
    notes = [f"job {r['job']} {r['status']} (exit {r['exit']}): {r['error'] or 'no error recorded'}"
             for r in rows if r["status"] != "complete"]
    table = {"columns": [["job", "job", "num"], ["overrides", "overrides"], ["status", "status", "label"],
                         ["exit", "exit", "num"], ["headline", "headline"], ["value", "value %", "num"],
                         ["items", "items", "num"], ["errors", "errors", "num"], ["seconds", "seconds", "num"],
                         ["link", "run page", "link"]],
             "filters": [["status", "status"], ["headline", "headline"]],
             "detail": [["overrides", "overrides"], ["error", "error"]], "page": 100}
    return {"title": f"memrun sweep {sweep_dir}", "notes": notes, "worst": worst_exit_code(jobs),
            "n_rows": len(rows), "rows": embed_json(rows), "table": embed_json(table), "items_title": "Jobs"}, written


def write_sweep(sweep_dir: Path, out: Path, page_name: str) -> int:
    """Write the sweep page to ``out`` and each job's run page; returns how many job pages."""
    context, written = sweep_context(sweep_dir, out, page_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render("sweep.html.j2", **context), encoding="utf-8")
    return written
