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


def interval_bars(bars: Sequence[dict[str, Any]], *, width: int = 640, scale: float = 1.0, unit: str = "%") -> str:
    """Horizontal bars of means with 95% interval whiskers, on a 0..``scale`` axis.

    bars: ``{"name", "value", "low", "high", "n"}`` (value/low/high None when unknown).
    """
    left, right, row = 190, 60, 22
    plot = width - left - right
    height = row * len(bars) + 30

    def x(v: float) -> float:
        return left + plot * min(max(v / scale, 0.0), 1.0)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" {FONT}>']
    for tick in range(0, 11, 2):
        tx = left + plot * tick / 10
        out.append(f'<line x1="{_f(tx)}" y1="0" x2="{_f(tx)}" y2="{height - 20}" stroke="#ddd"/>')
        label = f"{tick * 10 * scale:g}" if unit == "%" else f"{tick / 10 * scale:g}"
        out.append(f'<text x="{_f(tx)}" y="{height - 6}" text-anchor="middle">{label}</text>')
    for i, bar in enumerate(bars):
        y = i * row + 4
        out.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(str(bar["name"]))}</text>')
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
    """A histogram of ``values`` up to their 99th percentile (the rest in the last bin)."""
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    height, pad = 140, 24
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" {FONT}>'
            f'<text x="2" y="12">{escape(title)}</text>')
    if not len(data):
        return head + f'<text x="2" y="40" fill="#888">none recorded</text></svg>'
    top = float(np.percentile(data, 99)) or float(data.max()) or 1.0
    counts, edges = np.histogram(np.minimum(data, top), bins=bins, range=(0.0, top))
    peak = int(counts.max()) or 1
    bar_w = (width - 4) / bins
    out = [head]
    for i, c in enumerate(counts):
        if not c:
            continue
        h = (height - pad - 20) * c / peak
        out.append(f'<rect x="{_f(2 + i * bar_w)}" y="{_f(height - pad - h)}" width="{_f(bar_w - 1)}" height="{_f(h)}" '
                   f'fill="#8bb88b"><title>{edges[i]:.3g}-{edges[i + 1]:.3g} {escape(unit)}: {int(c)}</title></rect>')
    p50, p95 = (float(np.percentile(data, q)) for q in (50, 95))
    out.append(f'<text x="2" y="{height - 8}">0</text><text x="{width - 2}" y="{height - 8}" text-anchor="end">'
               f'{top:.3g} {escape(unit)}</text>')
    out.append(f'<text x="{width - 2}" y="12" text-anchor="end">p50 {p50:.3g} p95 {p95:.3g} (n {len(data)})</text>')
    out.append("</svg>")
    return "".join(out)


def forest(rows: Sequence[dict[str, Any]], *, band: float, min_delta: float, unit: str, width: int = 640) -> str:
    """A forest plot of deltas with their intervals; the null band (+-``band``) shaded and
    the gate (``min_delta``) drawn. rows: ``{"name", "delta", "low", "high"}`` (fractions)."""
    left, right, row = 190, 90, 22
    plot = width - left - right
    height = row * len(rows) + 34
    ends = [abs(v) for r in rows for v in (r["low"], r["high"], r["delta"]) if v is not None] + [band, abs(min_delta)]
    span = max(ends + [0.01]) * 1.1
    scale = 100 if unit == "pp" else 1

    def x(v: float) -> float:
        return left + plot * (v + span) / (2 * span)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" {FONT}>',
           f'<rect x="{_f(x(-band))}" y="0" width="{_f(x(band) - x(-band))}" height="{height - 22}" fill="#f2e6c9">'
           f'<title>null band +-{band * scale:.3g} {unit}</title></rect>',
           f'<line x1="{_f(x(0))}" y1="0" x2="{_f(x(0))}" y2="{height - 22}" stroke="#999"/>',
           f'<line x1="{_f(x(min_delta))}" y1="0" x2="{_f(x(min_delta))}" y2="{height - 22}" stroke="#c33" '
           f'stroke-dasharray="4 3"><title>gate min delta {min_delta * scale:+.3g} {unit}</title></line>']
    for tick in (-span, -span / 2, 0.0, span / 2, span):
        out.append(f'<text x="{_f(x(tick))}" y="{height - 6}" text-anchor="middle">{tick * scale:+.3g}</text>')
    for i, r in enumerate(rows):
        y = i * row + 12
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(str(r["name"]))}</text>')
        lo, hi, d = x(r["low"]), x(r["high"]), x(r["delta"])
        tip = f'{r["name"]}: {r["delta"] * scale:+.3g} [{r["low"] * scale:+.3g}, {r["high"] * scale:+.3g}] {unit}'
        out.append(f'<g><title>{escape(tip)}</title><path d="M{_f(lo)} {y}H{_f(hi)}" stroke="#123" stroke-width="2"/>'
                   f'<circle cx="{_f(d)}" cy="{y}" r="4" fill="{"#2a7" if r["low"] > 0 else "#c33" if r["high"] < 0 else "#678"}"/></g>')
        out.append(f'<text x="{width - right + 6}" y="{y + 4}">{r["delta"] * scale:+.1f}</text>')
    out.append("</svg>")
    return "".join(out)
