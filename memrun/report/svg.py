"""Inline SVG charts for the HTML report: plain strings, deterministic (same data, same bytes).

Values are fractions unless a scale says otherwise; every chart is a self-contained
``<svg>`` element with a ``<title>`` per mark, so a hover shows the exact figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

import numpy as np

FONT = 'font-family="sans-serif" font-size="11"'


def _f(x: float) -> str:
    """A coordinate with at most one decimal (small, stable output)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _open(width: int, height: int, label: str = "") -> str:
    """An ``<svg>`` that scales down to its container (viewBox; the page's CSS caps its width)."""
    aria = f' aria-label="{escape(label)}"' if label else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img"{aria} {FONT}>')


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Tick values on round steps (1, 2, 2.5 or 5 times a power of ten) covering
    [``low``, ``high``], about ``count`` of them; always includes 0 when the range spans it."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 10) + 0.0 for i in range(first, last + 1)]


def _tick_label(v: float, unit: str) -> str:
    text = f"{v:.6g}"
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}" if unit else text


def interval_bars(bars: Sequence[dict[str, Any]], *, width: int = 520, scale: float = 1.0, unit: str = "%") -> str:
    """Horizontal bars of means with 95% interval whiskers, on a 0..``scale`` axis.

    bars: ``{"name", "value", "low", "high", "n"}`` (value/low/high None when unknown).
    """
    left, right, row = 150, 56, 22
    plot = width - left - right
    height = row * len(bars) + 30

    def x(v: float) -> float:
        return left + plot * min(max(v / scale, 0.0), 1.0)

    out = [_open(width, height, "means with 95% intervals")]
    for tick in range(0, 11, 2):
        tx = left + plot * tick / 10
        out.append(f'<line x1="{_f(tx)}" y1="0" x2="{_f(tx)}" y2="{height - 20}" stroke="#ddd"/>')
        label = f"{tick * 10 * scale:g}%" if unit == "%" else f"{tick / 10 * scale:g}"
        out.append(f'<text x="{_f(tx)}" y="{height - 6}" text-anchor="middle">{label}</text>')
    for i, bar in enumerate(bars):
        y = i * row + 4
        out.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(_short_name(bar["name"]))}'
                   f'<title>{escape(str(bar["name"]))}</title></text>')
        if bar.get("value") is None:
            out.append(f'<text x="{left + 4}" y="{y + 13}" fill="#888">not measured</text>')
            continue
        v = bar["value"]
        tip = f'{bar["name"]}: {_pct(v, unit)}'
        if bar.get("low") is not None:
            tip += f' [{_pct(bar["low"], unit)}, {_pct(bar["high"], unit)}] 95%'
        tip += f' (n {bar.get("n", "?")})'
        out.append(f'<rect x="{left}" y="{y}" width="{_f(x(v) - left)}" height="16" fill="#6a9fd4">'
                   f'<title>{escape(tip)}</title></rect>')
        if bar.get("low") is not None:
            lo, hi, mid = x(bar["low"]), x(bar["high"]), y + 8
            out.append(f'<path d="M{_f(lo)} {mid}H{_f(hi)}M{_f(lo)} {mid - 5}V{mid + 5}M{_f(hi)} {mid - 5}V{mid + 5}" '
                       'stroke="#123" stroke-width="1.5"/>')
        out.append(f'<text x="{width - right + 4}" y="{y + 13}">{_pct(v, unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def _pct(v: float, unit: str) -> str:
    return f"{100 * v:.1f}%" if unit == "%" else f"{v:.3f}"


def histogram(values: Sequence[float], *, title: str, unit: str, width: int = 320, bins: int = 30) -> str:
    """A histogram of ``values`` up to their 99th percentile (the rest in the last bin), with
    the 50th and 95th percentiles marked by lines and written in the corner."""
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    height, pad = 150, 24
    head = _open(width, height, title) + f'<text x="2" y="12">{escape(title)}</text>'
    if not len(data):
        return head + '<text x="2" y="40" fill="#888">none recorded</text></svg>'
    top = float(np.percentile(data, 99)) or float(data.max()) or 1.0
    counts, edges = np.histogram(np.minimum(data, top), bins=bins, range=(0.0, top))
    peak = int(counts.max()) or 1
    bar_w = (width - 4) / bins
    out = [head]
    for i, c in enumerate(counts):
        if not c:
            continue
        h = (height - pad - 34) * c / peak
        out.append(f'<rect x="{_f(2 + i * bar_w)}" y="{_f(height - pad - h)}" width="{_f(bar_w - 1)}" height="{_f(h)}" '
                   f'fill="#8bb88b"><title>{edges[i]:.3g}-{edges[i + 1]:.3g} {escape(unit)}: {int(c)}</title></rect>')
    p50, p95 = (float(np.percentile(data, q)) for q in (50, 95))
    for name, v, color in (("p50", p50, "#225"), ("p95", p95, "#c33")):
        x = 2 + (width - 4) * min(v / top, 1.0)
        out.append(f'<line x1="{_f(x)}" y1="30" x2="{_f(x)}" y2="{height - pad}" stroke="{color}" stroke-dasharray="3 2">'
                   f'<title>{name} {v:.3g} {escape(unit)}</title></line>'
                   f'<text x="{_f(min(max(x, 14), width - 14))}" y="28" text-anchor="middle" fill="{color}">{name}</text>')
    out.append(f'<text x="2" y="{height - 8}">0</text><text x="{width - 2}" y="{height - 8}" text-anchor="end">'
               f'{top:.3g} {escape(unit)}</text>')
    out.append(f'<text x="{width - 2}" y="12" text-anchor="end">p50 {p50:.3g} p95 {p95:.3g} {escape(unit)} (n {len(data)})</text>')
    out.append("</svg>")
    return "".join(out)


def _span(rows: Sequence[dict[str, Any]], floor: Sequence[float]) -> float:
    """Half-width of a symmetric axis: every point estimate and ``floor`` fit, and the
    intervals of most rows (those wider than 3 times the median interval are clipped)."""
    points = [abs(r["delta"]) for r in rows if r.get("delta") is not None]
    ends = sorted(max(abs(r["low"]), abs(r["high"])) for r in rows if r.get("low") is not None)
    median = ends[len(ends) // 2] if ends else 0.0
    kept = [e for e in ends if e <= 3 * max(median, 1e-9)]
    return max(points + kept + [abs(f) for f in floor] + [0.01]) * 1.1


def _clip_mark(x: float, y: float, side: int, text: str) -> str:
    """A triangle at the axis end for an interval running past it, with its true end."""
    tip = x + 6 * side
    anchor = "end" if side > 0 else "start"
    return (f'<path d="M{_f(x)} {y - 5}L{_f(tip)} {y}L{_f(x)} {y + 5}Z" fill="#123"><title>{escape(text)}</title></path>'
            f'<text x="{_f(x - 3 * side)}" y="{y - 6}" text-anchor="{anchor}" font-size="9" fill="#555">{escape(text)}</text>')


def forest(rows: Sequence[dict[str, Any]], *, band: float, min_delta: float, unit: str, width: int = 560) -> str:
    """A forest plot of deltas with their intervals; the null band (+-``band``) shaded and
    the gate (``min_delta``) drawn. rows: ``{"name", "delta", "low", "high"}`` (fractions).

    The axis is symmetric around 0 with ticks on round values labelled with ``unit``
    (``pp``: percentage points, or ``score``); an interval far wider than the others
    (a category of a few items) is clipped at the axis end with a marker and its end's value."""
    left, right, row = 150, 70, 24
    plot = width - left - right
    height = row * len(rows) + 40
    scale = 100 if unit == "pp" else 1
    half = _span(rows, [band, min_delta]) * scale
    ticks = nice_ticks(-half, half, 7)
    span = max(abs(ticks[0]), abs(ticks[-1])) / scale

    def x(v: float) -> float:
        return left + plot * (min(max(v, -span), span) + span) / (2 * span)

    bottom = height - 26
    out = [_open(width, height, "forest plot of B - A"),
           f'<rect x="{_f(x(-band))}" y="0" width="{_f(x(band) - x(-band))}" height="{bottom}" fill="#f2e6c9">'
           f'<title>null band +-{band * scale:.3g} {unit}</title></rect>']
    for t in ticks:
        tx = x(t / scale)
        out.append(f'<line x1="{_f(tx)}" y1="0" x2="{_f(tx)}" y2="{bottom}" stroke="{"#999" if t == 0 else "#e4e4e4"}"/>'
                   f'<text x="{_f(tx)}" y="{bottom + 14}" text-anchor="middle">{t:+.6g}</text>')
    out.append(f'<text x="{_f(left + plot / 2)}" y="{height - 1}" text-anchor="middle" fill="#555">B - A ({unit})</text>')
    if -span <= min_delta <= span:
        out.append(f'<line x1="{_f(x(min_delta))}" y1="0" x2="{_f(x(min_delta))}" y2="{bottom}" stroke="#c33" '
                   f'stroke-dasharray="4 3"><title>gate min delta {min_delta * scale:+.3g} {unit}</title></line>')
    for i, r in enumerate(rows):
        y = i * row + 14
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(_short_name(r["name"]))}'
                   f'<title>{escape(str(r["name"]))}</title></text>')
        lo, hi, d = x(r["low"]), x(r["high"]), x(r["delta"])
        tip = f'{r["name"]}: {r["delta"] * scale:+.3g} [{r["low"] * scale:+.3g}, {r["high"] * scale:+.3g}] {unit}'
        color = "#2a7" if r["low"] > 0 else "#c33" if r["high"] < 0 else "#678"
        out.append(f'<g><title>{escape(tip)}</title><path d="M{_f(lo)} {y}H{_f(hi)}" stroke="#123" stroke-width="2"/>'
                   f'<circle cx="{_f(d)}" cy="{y}" r="4" fill="{color}"/></g>')
        if r["low"] < -span:
            out.append(_clip_mark(lo, y, -1, f'{r["low"] * scale:+.1f}'))
        if r["high"] > span:
            out.append(_clip_mark(hi, y, 1, f'{r["high"] * scale:+.1f}'))
        out.append(f'<text x="{width - right + 8}" y="{y + 4}">{r["delta"] * scale:+.1f} {unit}</text>')
    out.append("</svg>")
    return "".join(out)


def _short_name(name: Any, limit: int = 22) -> str:
    text = str(name)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def value_range(series: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(lowest, highest) of the series' values and interval ends; (0, 1) when none is known."""
    known = [v for s in series for v in (s.get("low"), s.get("high"), s.get("value")) if v is not None]
    return (min(known), max(known)) if known else (0.0, 1.0)


def arms_chart(series: Sequence[dict[str, Any]], *, unit: str = "%", width: int = 520, title: str = "",
               domain: tuple[float, float] | None = None) -> str:
    """Several runs' means with 95% intervals on one axis (the multi-arm chart).

    series: ``{"name", "value", "low", "high", "n"}`` per run (fractions; low/high None
    when unknown, value None when not measured). The axis spans the data on round ticks
    (percent for ``unit="%"``, the raw score otherwise), at least 10 points wide; small
    multiples pass one ``domain`` (low, high fractions) so their axes agree."""
    left, right, row = 150, 56, 22
    plot = width - left - right
    top_pad = 18 if title else 4
    height = row * max(len(series), 1) + 30 + top_pad
    scale = 100 if unit == "%" else 1
    lo_v, hi_v = domain or value_range(series)
    pad = max((hi_v - lo_v) * 0.08, (0.1 - (hi_v - lo_v)) / 2, 0.005)
    low, high = lo_v - pad, hi_v + pad
    if unit == "%":
        low, high = (0.0, high - low) if low < 0 else (low, high)
        low, high = (low - (high - 1.0), 1.0) if high > 1.0 else (low, high)
        low = max(low, 0.0)
    ticks = nice_ticks(low * scale, high * scale, 5)
    a, b = ticks[0] / scale, ticks[-1] / scale
    b = b if b > a else a + 1

    def x(v: float) -> float:
        return left + plot * (min(max(v, a), b) - a) / (b - a)

    out = [_open(width, height, title or "runs with 95% intervals")]
    if title:
        out.append(f'<text x="2" y="12" font-weight="bold">{escape(_short_name(title, 60))}</text>')
    bottom = height - 22
    for t in ticks:
        tx = x(t / scale)
        out.append(f'<line x1="{_f(tx)}" y1="{top_pad}" x2="{_f(tx)}" y2="{bottom}" stroke="#e4e4e4"/>'
                   f'<text x="{_f(tx)}" y="{bottom + 14}" text-anchor="middle">{escape(_tick_label(t, unit if unit == "%" else ""))}</text>')
    for i, s_ in enumerate(series):
        y = top_pad + i * row + 11
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(_short_name(s_["name"]))}'
                   f'<title>{escape(str(s_["name"]))}</title></text>')
        v = s_.get("value")
        if v is None:
            out.append(f'<text x="{left + 4}" y="{y + 4}" fill="#888">not measured</text>')
            continue
        tip = f'{s_["name"]}: {_pct(v, unit)}'
        if s_.get("low") is not None:
            tip += f' [{_pct(s_["low"], unit)}, {_pct(s_["high"], unit)}] 95%'
            out.append(f'<path d="M{_f(x(s_["low"]))} {y}H{_f(x(s_["high"]))}M{_f(x(s_["low"]))} {y - 5}V{y + 5}'
                       f'M{_f(x(s_["high"]))} {y - 5}V{y + 5}" stroke="#123" stroke-width="1.5"/>')
        tip += f' (n {s_.get("n", "?")})'
        out.append(f'<circle cx="{_f(x(v))}" cy="{y}" r="4.5" fill="#3a78b8"><title>{escape(tip)}</title></circle>')
        out.append(f'<text x="{width - right + 6}" y="{y + 4}">{_pct(v, unit)}</text>')
    out.append("</svg>")
    return "".join(out)
