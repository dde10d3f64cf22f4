"""Render a comparison (``Comparison.to_dict()``) as text, markdown or JSON.

All three formats render the same dict, so they carry the same numbers. Deltas are
fractions in the dict and percentage points (pp) in text and markdown.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table

from memrun.lazy import lazy
from memrun.report import md

if TYPE_CHECKING:
    from memrun.report import compare_pr as report_compare_pr
else:
    report_compare_pr = lazy("memrun.report.compare_pr")

NONCOMPARABLE = "NON-COMPARABLE"


def number(x: Any, spec: str, scale: float = 1.0) -> str:
    """``x * scale`` formatted by ``spec``; "-" for a value the comparison could not compute
    (None or NaN). Every optional number of the comparison's dict goes through here (or
    :func:`_pp`, :func:`_score`, :func:`_rate`), so no renderer fails on one."""
    if x is None or x != x:  # x != x: NaN
        return "-"
    return format(x * scale if scale != 1.0 else x, spec)


def _pp(x: float | None, signed: bool = True, digits: int = 1) -> str:
    if x is None or x != x:
        return "-"
    value = round(100 * x, digits) or 0.0
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _score(x: float | None, signed: bool = True, digits: int = 3) -> str:
    if x is None or x != x:
        return "-"
    value = round(x, digits) or 0.0
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def bound_digits(bounds: list[float | None], threshold: float, base: int, scale: float) -> int:
    """Decimals (from ``base``, at most ``base + 4``) at which no bound that differs from
    ``threshold`` prints equal to it: a lower bound of +0.00025 pp above a threshold of 0
    prints as +0.0003, never as +0.0 (which reads as "not a pass"). A bound not computed
    (None or NaN) is left out."""
    known = [b for b in bounds if b is not None and b == b]
    for digits in range(base, base + 5):
        if all(b == threshold or round(b * scale, digits) != round(threshold * scale, digits) for b in known):
            return digits
    return base + 4


def _delta(d: Mapping[str, Any]) -> tuple[Any, str]:
    """(formatter of a signed delta, unit suffix) for the comparison's metric."""
    return (_score, "") if d.get("unit") == "score" else (_pp, " pp")


def _interval(block: Mapping[str, Any], d: Mapping[str, Any], why: bool = False) -> str:
    """``delta unit [low, high]`` with enough decimals that a bound next to the gate's
    threshold never prints equal to it (:func:`bound_digits`); ``delta unit (no interval)``
    for an interval that cannot be read (``unreadable``: a degenerate interval or fewer than
    3 clusters, which would print as a certain [+3.1, +3.1]), with the reason when ``why``."""
    fmt, unit = _delta(d)
    if block.get("unreadable"):
        return f"{fmt(block.get('delta'))}{unit} (no interval" + (f": {block['unreadable']})" if why else ")")
    score = d.get("unit") == "score"
    digits = bound_digits([block.get("low"), block.get("high")], float(d["verdict"].get("min_delta") or 0.0),
                          3 if score else 1, 1.0 if score else 100.0)
    return (f"{fmt(block.get('delta'), digits=digits)}{unit} "
            f"[{fmt(block.get('low'), digits=digits)}, {fmt(block.get('high'), digits=digits)}]")


def _rate(x: float | None) -> str:
    return "-" if x is None or x != x else f"{100 * x:.1f}%"  # x != x: NaN


def _level(x: float | None, d: Mapping[str, Any]) -> str:
    """An arm's mean: a percentage for proportions, the 0-1 score for MRR and nDCG."""
    return _score(x, signed=False) if d.get("unit") == "score" else _rate(x)


def _p(p: float | None) -> str:
    """``p = x``; a p-value too small for a double prints as the bound ``p < 1e-300``, never 0;
    one not computed as ``p = -``."""
    return "p < 1e-300" if p is not None and p < 1e-300 else f"p = {number(p, '.4g')}"


def _how(block: Mapping[str, Any], s: Mapping[str, Any], d: Mapping[str, Any]) -> str:
    """Which 95% interval decided, and how it was computed."""
    fmt, unit = _delta(d)
    boot = block["bootstrap"]
    strata = f", stratified by {s['stratify_by']}" if s.get("stratify_by") else ""
    by, after = s["cluster_by"] or "item", ""
    if block.get("clustering") == "evidence" and by != "evidence":  # the wider of two clusterings decided
        other = block["other"]
        by, strata = "shared evidence session", ""
        after = (f"; the wider of two clusterings (with item clusters: [{fmt(other['low'])}, "
                 f"{fmt(other['high'])}]{unit})")
    resampled = f"paired bootstrap, {number(s['resamples'], ',')} resamples, seed {s['seed']}, clusters by {by}{strata}"
    if block.get("interval") == "calibrated_t":
        check = block.get("design_check") or {}
        crit = check.get("crit_up") or block.get("crit")
        nominal = check.get("nominal_crit")
        raised = (f", raised from the t quantile {nominal:.2f} by the design check" if check and nominal is not None
                  and crit is not None and crit > nominal + 1e-9 else "")
        return (f"95% design-calibrated t interval: SE {fmt(block.get('se'), signed=False)}{unit} (CR2, never below "
                f"the items' own), critical value {number(crit, '.2f')}{raised}, Bell-McCaffrey df "
                f"{number(block.get('df'), '.2f')}; the {resampled}: [{fmt(boot['low'])}, {fmt(boot['high'])}]{unit}{after}")
    return f"95% {resampled}{after}"


def check_line(c: Mapping[str, Any]) -> str:
    """The design check: the simulated false-pass rate beside the verdict, and how it was reached.
    Its ``discordance`` (the share of items whose delta is not zero, what the simulation
    draws) prints as "nonzero deltas": the items line's "discordance" is another figure, the
    share whose majority labels differ (an abstention against a wrong answer differs in
    label, not in score)."""
    crit = "no critical value holds" if c.get("crit_up") is None else f"critical value {number(c['crit_up'], '.2f')}"
    nominal = ("no t quantile" if c.get("nominal_crit") is None
               else f"t {number(c['nominal_crit'], '.2f')} on {number(c.get('df'), '.2f')} df")
    return (f"design check ({c.get('method')}, {number(c.get('replications'), ',')} simulated null comparisons a "
            f"scenario, seed {c.get('seed')}): the nominal t gate ({nominal}) passes "
            f"{number(c.get('nominal_rate'), '.1f', 100)}% of them, this gate ({crit}) {number(c.get('rate'), '.1f', 100)}% "
            f"| ICC {number(c.get('icc'), '.3f')} (99% upper {number(c.get('icc_upper'), '.3f')}), nonzero deltas "
            f"{number(c.get('discordance'), '.1f', 100)}%, level {number(c.get('level'), '.0f', 100)}%"
            + (f" | {c['refused']}" if c.get("refused") else ""))


def power_line(p: Mapping[str, Any], d: Mapping[str, Any]) -> str:
    """The power a comparison had, printed beside an unresolved verdict (and by ``memrun
    plan --pilot``): the MDE at the ICC's estimate with how far its power could be from
    80% over the ICC's 90% interval and the effect shapes (:mod:`memrun.stats.mde`), or why
    none is printed. A figure not computed prints as "-"."""
    fmt, unit = _delta(d)
    status = p.get("status")
    a, b = p.get("icc_range") or (None, None)
    span = f"[{number(a, '.3f')}, {number(b, '.3f')}]"
    if status == "none":
        return (f"power: no effect up to the metric's range reaches {number(p.get('power'), '.0%')} power on this design "
                f"at the estimated ICC {number(p.get('icc'), '.3f')} (simulated with the gate's own critical value: "
                f"{number(p.get('simulated_power'), '.0%')} at the largest effect, {number(p.get('power_low'), '.0%')}-"
                f"{number(p.get('power_high'), '.0%')} over the ICC's 90% interval {span} and normal or skewed cluster "
                f"effects); more {p.get('units')} are the remedy (memrun.stats.mde)")
    if status == "refused":
        return f"power: no trustworthy minimum detectable effect: {p.get('reason')} (memrun.stats.mde)"
    loose = " at the estimated ICC" if status == "loose" else ""
    factor, needed, available = p.get("factor"), p.get("needed"), p.get("available")
    more = (f"about {number(factor, '.1f')}x the {p.get('units')} ({p.get('n_units')} -> ~{number(needed, '')}){loose}"
            if factor is None or factor > 1 else f"no more {p.get('units')} (it is above the MDE)")
    if factor is not None and factor > 1 and available and needed is not None and needed > available:
        more += (f", but {p.get('benchmark')} has only {available} {p.get('available_what')}: no comparison on it "
                 "can detect this effect; look for a benchmark with more independent histories, or a larger effect")
    how = ("simulated with the gate's own critical value" if p.get("method") == "simulated"
           else f"SE {fmt(p.get('se'), signed=False)}{unit}")
    mde = f"minimum detectable effect at {number(p.get('power'), '.0%')} power {fmt(p.get('mde'), signed=False)}{unit}"
    effect = f"an effect of {fmt(p.get('effect'), signed=False)}{unit} would need {more}"
    if status is None:  # a comparison saved before the spread was computed
        return f"power: {mde} ({how}); {effect} (memrun.stats.power)"
    lo, hi = number(p.get("power_low"), ".0%"), number(p.get("power_high"), ".0%")
    spread = (f"{lo}-{hi} over the ICC's 90% interval {span} and normal or skewed cluster effects"
              if status == "trusted" else
              f"not pinned down: over the ICC's 90% interval {span} and normal or skewed cluster effects "
              f"its power is anywhere from {lo} to {hi}")
    shape = (f", {number(p['skew_weight'], '.0%')} weight on {str(p.get('skew_shape')).replace('_', ' ')} effects at "
             f"their ICC {number(p.get('skew_icc'), '.3f')} as the clusters' skewness suggests"
             if p.get("skew_weight") else "")
    return (f"power: {mde} at the estimated ICC {number(p.get('icc'), '.3f')}{shape} ({how}); {spread}; {effect} "
            "(memrun.stats.mde)")


def summary_lines(d: Mapping[str, Any]) -> list[str]:
    """The report's header lines (shared by text and markdown)."""
    s, o, v = d["settings"], d["overall"], d["verdict"]
    fmt, unit = _delta(d)
    treatments = ", ".join(s["treatments"]) or "none"
    scale = " (a mean score on 0-1, not a percentage)" if d.get("unit") == "score" else ""
    lines = [
        f"A = {d['run_a']}",
        f"B = {d['run_b']}",
        f"axis {d['axis']} | metric {d['metric']}{scale} | denominator {d['denominator']} | treatments: {treatments}",
        f"verdict: {v['outcome'].upper()} ({v['reason'].replace('_', ' ')}) | gate min delta "
        f"{fmt(v.get('min_delta'))}{unit}, null band {fmt(v.get('band'), signed=False)}{unit} | exit code {d['exit_code']}",
    ]
    if d.get("assumptions"):
        lines.append(d["assumptions"])
    if o.get("design_check"):
        lines.append(check_line(o["design_check"]))
    if v.get("detail"):
        held = "no pass" if v.get("reason") == "credited_for_absence" else "not enough evidence for a verdict"
        lines.append(f"{held}: {v['detail']}")
    if v["outcome"] == "unresolved" and d.get("power"):
        lines.append(power_line(d["power"], d))
    if d.get("categories"):
        c = d["categories"]
        lines.append(f"categories read: {', '.join(c['read'])} ({c['chosen']})")
    lines += [
        f"B - A: {_interval(o, d, why=True)}" + ("" if o.get("unreadable") else f" | {_how(o, s, d)}"),
        f"n items {o['n_items']} in {o['n_clusters']} clusters | wins {o['wins']} ties {o['ties']} losses {o['losses']} "
        f"| discordance {_rate(d.get('discordance'))} | A {_level(o.get('a_mean'), d)} B {_level(o.get('b_mean'), d)}",
    ]
    if d["calibrated"]:
        c = d["calibrated"]
        lines.append(
            f"judge-corrected (J = {number(c.get('j'), '.3f')}): {_pp(c.get('mean'))} pp "
            + ("(no interval)" if c.get("unreadable") else f"[{_pp(c.get('low'))}, {_pp(c.get('high'))}]")
            + ("" if c["corrected"] else " (not corrected)")
        )
    m = d["mcnemar"]
    kind = (f"McNemar cluster-adjusted (Durkalski 2003, {m['n_clusters']} clusters)"
            if m and m.get("method") == "durkalski" else "McNemar exact")
    if m and m.get("p_value") is None:
        lines.append(f"{kind}: B right/A wrong {m['b01']}, A right/B wrong {m['b10']}, no p-value ({m['skipped']})")
    else:
        lines.append(f"{kind}: B right/A wrong {m['b01']}, A right/B wrong {m['b10']}, {_p(m['p_value'])}"
                     if m else "McNemar: n/a (scores are not binary)")
    w = d["wilcoxon"]
    floor = (f" (smallest attainable p with {w['n_nonzero']} non-tied {w['unit']}s: {number(w['min_p'], '.3g')})"
             if w and (w.get("min_p") or 0) > 1e-3 else "")
    lines.append(f"Wilcoxon signed-rank over {w['n_units']} {w['unit']}s' mean deltas: {_p(w['p_value'])} "
                 f"({w.get('method', 'exact')}){floor}" if w
                 else f"Wilcoxon signed-rank: skipped ({d['wilcoxon_skipped']})")
    if d["axis"] == "accuracy":
        lines.append(f"flip rate across repeats (paired items): A {_rate(d['flip_rate_a'])} | B {_rate(d['flip_rate_b'])}")
    st = d["stable_only"]
    if st:
        lines.append(f"stable-only ({st['n_items']} items, {d['n_unstable']} unstable left out): {_interval(st, d)}")
    elif d["n_unstable"]:
        lines.append(f"stable-only: none (all {d['n_unstable']} paired items are unstable in A or B)")
    elif d["axis"] == "accuracy":
        lines.append("stable-only: every paired item is stable; same as above")
    excluded = ", ".join(f"{k} {n}" for k, n in sorted(d["excluded"].items())) or "none"
    lines.append(f"excluded from both arms: {excluded} | only in A {d['only_a']} | only in B {d['only_b']}")
    if d.get("data"):
        f = d["data"]
        lines.append(f"errored items: A {f['errors_a']}/{f['items_a']} ({_rate(f['error_share_a'])}), "
                     f"B {f['errors_b']}/{f['items_b']} ({_rate(f['error_share_b'])}) | items in both runs "
                     f"{_rate(f['paired_share'])}")
    for diff in d["differences"]:
        lines.append(f"differs: {diff['field']}: A={diff['a']!r} B={diff['b']!r} ({diff['why']})")
    lines.extend(f"warning: {w}" for w in d["warnings"])
    return lines


def category_rows(d: Mapping[str, Any]) -> list[list[str]]:
    """One row per category (the cells of :data:`HEADERS`), shared by text, markdown and HTML."""
    rows = []
    for cat, block in d["per_category"].items():
        name = cat if block["label"] == cat else f"{cat} {block['label']}"
        mark = " *" if block.get("interval") in ("cr2_bm", "calibrated_t") and not block.get("unreadable") else ""
        holm = "too few" if block.get("insufficient") else ("yes" if block.get("holm_significant") else "no")
        rows.append([name, str(block["n_items"]), str(block["n_clusters"]),
                     f"{block['wins']}/{block['ties']}/{block['losses']}",
                     _level(block["a_mean"], d), _level(block["b_mean"], d), _interval(block, d) + mark, holm])
    return rows


HEADERS = ["category", "n", "clusters", "wins/ties/losses", "A", "B", "B - A [95% interval]", "Holm 5%"]
CATEGORY_NOTE = ("per-category intervals are unadjusted 95% intervals, cut to the metric's range; 'Holm 5%' says "
                 "whether a category's difference survives Holm's adjustment over all the categories (family-wise "
                 "5%); 'too few': fewer than 10 items or 3 clusters, or a degenerate interval; 'no interval': fewer "
                 "than 3 clusters or a degenerate interval (all tied, under 1 degree of freedom, zero width), "
                 "which says nothing about the uncertainty; * the t interval on the CR2 SE (few clusters) decided")


def render_text(d: Mapping[str, Any], width: int = 120) -> str:
    """Plain text with a per-category table; every line prefixed when non-comparable."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False)
    for line in summary_lines(d):
        console.print(line, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, title="per category", title_justify="left")
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "category" else "right", no_wrap=True)
    for row in category_rows(d):
        table.add_row(*row)
    console.print(table)
    console.print(CATEGORY_NOTE, soft_wrap=True)
    return _label(buf.getvalue(), d)


def render_markdown(d: Mapping[str, Any]) -> str:
    """Markdown for a pull-request comment. With ``d["runs"]``
    (:func:`memrun.report.compare_pr.run_context`) it starts with the sticky-comment marker
    and names the runs by run id and configuration instead of paths. Dataset and config
    text is escaped for its position (:mod:`memrun.report.md`)."""
    v, runs = d["verdict"], d.get("runs")
    out = [f"### memrun compare: **{v['outcome'].upper()}** (exit code {d['exit_code']})", ""]
    out += report_compare_pr.fake_banner(runs) if runs else []
    # the lines are plain text that quotes dataset text (categories, warnings): escaped whole
    out += [f"- {md.inline(line)}" for line in summary_lines(d)[2 if runs else 0:]]
    out += ["", *md.table(HEADERS, category_rows(d))]
    out += ["", md.inline(CATEGORY_NOTE)]
    body = _label("\n".join(out) + "\n", d, markdown=True)
    if not runs:
        return body
    return "\n".join([runs["marker"], body, *report_compare_pr.runs_markdown(runs)]) + "\n"


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
            markup = re.match(r"(#+ |- |\| |> )?", line).group(0)  # type: ignore[union-attr]
            rest = line[len(markup):]
            if not line.strip() or set(line) <= set("|-"):
                out.append(line)  # blank lines and the table's rule carry no figure
            else:
                out.append(f"{markup}{NONCOMPARABLE} {rest}")
        else:
            out.append(f"{NONCOMPARABLE} {line}")
    return "\n".join(out) + "\n"
