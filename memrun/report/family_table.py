"""Render a family of arms compared with one baseline (``memrun sweep DIR --baseline JOB``,
``memrun compare A B C ...``):
each arm's own gate beside the family-wise (Holm) verdict that alone marks a winner."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy
from memrun.report.compare_report import number

if TYPE_CHECKING:
    from memrun.report import md as report_md
else:
    report_md = lazy("memrun.report.md")

HEADERS = ["job", "overrides", "B - A [95% interval]", "own gate", "p (one-sided)", "Holm p", "winner"]


def family_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The cells of :data:`HEADERS`, one row per arm."""
    out = []
    for r in rows:
        if r.get("error"):
            out.append([str(r["job"]), r["overrides"], f"not compared: {r['error']}", "-", "-", "-", "-"])
            continue
        out.append([str(r["job"]), r["overrides"],
                    f"{number(r.get('delta'), '+.2f', 100)} pp " + (
                        "(no interval)" if r.get("unreadable") else
                        f"[{number(r.get('low'), '+.2f', 100)}, {number(r.get('high'), '+.2f', 100)}]"),
                    r["outcome"], number(r.get("p_pass"), ".4g"), number(r.get("holm_p"), ".4g"),
                    "yes" if r["winner"] else "no"])
    return out


def family_note(d: Mapping[str, Any]) -> str:
    """What the family verdict controls, in one line."""
    base = f"job {d['baseline']} ({d['baseline_overrides'] or 'no overrides'})" if isinstance(d["baseline"], int) \
        else str(d["baseline"])
    return (f"{d['k']} arm(s) against baseline {base}: "
            f"a winner needs its own gate's PASS and Holm's step-down over the arms' one-sided gate p-values at "
            f"{100 * d['alpha']:.1f}% family-wise (memrun.stats.family); an arm whose own gate passes but Holm's "
            "does not is not marked; '(no interval)': the arm's interval cannot be read (fewer than 3 clusters, "
            "or degenerate: all tied, under 1 degree of freedom)")


def render(d: Mapping[str, Any], fmt: str) -> str:
    """The family as ``text``, ``markdown`` or ``json`` (``csv``: as text)."""
    if fmt == "json":
        return json.dumps(d, indent=2, default=str) + "\n"
    rows = family_rows(d["arms"])
    if fmt == "markdown":
        return "\n".join(["", *report_md.table(HEADERS, rows), "", family_note(d)]) + "\n"
    # a refusal spans lines (one per differing field): its first line in the cell, the whole
    # under the table (a cell of every line at once padded the column past 1,000 characters)
    rows = [[cell.split("\n", 1)[0] for cell in row] for row in rows]
    reasons = [f"{a['job']}: not compared: {a['error']}" for a in d["arms"] if "\n" in (a.get("error") or "")]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)] if rows else [len(h) for h in HEADERS]
    lines = ["", "  ".join(h.ljust(w) for h, w in zip(HEADERS, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join([*lines, family_note(d), *reasons]) + "\n"
