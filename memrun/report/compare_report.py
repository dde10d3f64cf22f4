"""Render a comparison (``Comparison.to_dict()``) as text, markdown or JSON.

All three formats render the same dict, so they carry the same numbers. Deltas are
fractions in the dict and percentage points (pp) in text and markdown.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

NONCOMPARABLE = "NON-COMPARABLE"


def _pp(x: float | None, signed: bool = True) -> str:
    if x is None:
        return "-"
    value = round(100 * x, 1) or 0.0
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _interval(block: Mapping[str, Any]) -> str:
    return f"{_pp(block['delta'])} pp [{_pp(block['low'])}, {_pp(block['high'])}]"


def _rate(x: float | None) -> str:
    return "-" if x is None or x != x else f"{100 * x:.1f}%"  # x != x: NaN (no repeated item)


def summary_lines(d: Mapping[str, Any]) -> list[str]:
    """The report's header lines (shared by text and markdown)."""
    s, o, v = d["settings"], d["overall"], d["verdict"]
    treatments = ", ".join(s["treatments"]) or "none"
    lines = [
        f"A = {d['run_a']}",
        f"B = {d['run_b']}",
        f"axis {d['axis']} | metric {d['metric']} | denominator {d['denominator']} | treatments: {treatments}",
        f"verdict: {v['outcome'].upper()} ({v['reason'].replace('_', ' ')}) | gate min delta {_pp(v['min_delta'])} pp, "
        f"null band {_pp(v['band'], signed=False)} pp | exit code {d['exit_code']}",
        f"B - A: {_interval(o)} | 95% paired bootstrap, {s['resamples']:,} resamples, seed {s['seed']}, "
        f"clusters by {s['cluster_by'] or 'item'}",
        f"n items {o['n_items']} in {o['n_clusters']} clusters | wins {o['wins']} ties {o['ties']} losses {o['losses']} "
        f"| discordance {_rate(d['discordance'])} | A {_rate(o['a_mean'])} B {_rate(o['b_mean'])}",
    ]
    if d["calibrated"]:
        c = d["calibrated"]
        lines.append(
            f"judge-corrected (J = {c['j']:.3f}): {_pp(c['mean'])} pp [{_pp(c['low'])}, {_pp(c['high'])}]"
            + ("" if c["corrected"] else " (not corrected)")
        )
    m = d["mcnemar"]
    lines.append(f"McNemar exact: B right/A wrong {m['b01']}, A right/B wrong {m['b10']}, p = {m['p_value']:.4g}"
                 if m else "McNemar exact: n/a (scores are not binary)")
    w = d["wilcoxon"]
    lines.append(f"Wilcoxon over {w['n_seeds']} seeds: p = {w['p_value']:.4g}" if w
                 else f"Wilcoxon over seeds: skipped ({d['wilcoxon_skipped']})")
    lines.append(f"flip rate across repeats: A {_rate(d['flip_rate_a'])} | B {_rate(d['flip_rate_b'])}")
    st = d["stable_only"]
    lines.append(f"stable-only ({st['n_items']} items, {d['n_unstable']} unstable left out): {_interval(st)}" if st
                 else f"stable-only: same as above ({d['n_unstable']} unstable items)")
    excluded = ", ".join(f"{k} {n}" for k, n in sorted(d["excluded"].items())) or "none"
    lines.append(f"excluded from both arms: {excluded} | only in A {d['only_a']} | only in B {d['only_b']}")
    for diff in d["differences"]:
        lines.append(f"differs: {diff['field']}: A={diff['a']!r} B={diff['b']!r} ({diff['why']})")
    lines.extend(f"warning: {w}" for w in d["warnings"])
    return lines


def _category_rows(d: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for cat, block in d["per_category"].items():
        name = cat if block["label"] == cat else f"{cat} {block['label']}"
        rows.append([name, str(block["n_items"]), f"{block['wins']}/{block['ties']}/{block['losses']}",
                     _rate(block["a_mean"]), _rate(block["b_mean"]), _interval(block)])
    return rows


HEADERS = ["category", "n", "wins/ties/losses", "A", "B", "B - A [95% interval]"]


def render_text(d: Mapping[str, Any], width: int = 120) -> str:
    """Plain text with a per-category table; every line prefixed when non-comparable."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False)
    for line in summary_lines(d):
        console.print(line, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, title="per category", title_justify="left")
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "category" else "right", no_wrap=True)
    for row in _category_rows(d):
        table.add_row(*row)
    console.print(table)
    return _label(buf.getvalue(), d)


def render_markdown(d: Mapping[str, Any]) -> str:
    """Markdown for a pull-request comment."""
    v = d["verdict"]
    out = [f"### memrun compare: **{v['outcome'].upper()}**", ""]
    out += [f"- {line}" for line in summary_lines(d)]
    out += ["", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(row) + " |" for row in _category_rows(d)]
    return _label("\n".join(out) + "\n", d, markdown=True)


def render_json(d: Mapping[str, Any]) -> str:
    """Machine-readable JSON (fractions, not pp); ``noncomparable`` says if it was forced."""
    return json.dumps(d, indent=2, default=str) + "\n"


def _label(text: str, d: Mapping[str, Any], markdown: bool = False) -> str:
    """Prefix every line with NON-COMPARABLE when the comparison was forced.

    In markdown the label goes after the line's markup (heading, bullet, table cell)
    so that the document still renders.
    """
    if not d["noncomparable"]:
        return text
    out = []
    for line in text.splitlines():
        if markdown:
            markup = re.match(r"(#+ |- |\| )?", line).group(0)  # type: ignore[union-attr]
            rest = line[len(markup):]
            if not line.strip() or set(line) <= set("|-"):
                out.append(line)  # blank lines and the table's rule carry no figure
            else:
                out.append(f"{markup}{NONCOMPARABLE} {rest}")
        else:
            out.append(f"{NONCOMPARABLE} {line}")
    return "\n".join(out) + "\n"
