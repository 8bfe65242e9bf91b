"""Small server-rendered SVG charts: a stacked bar of parts (the state mix) and a line chart of p50/p95 over time.

Pure functions from numbers to SVG markup: no framework, no JavaScript, no CDN, no inline style (colours are
presentation attributes, which a strict CSP allows). Every text is escaped. The drawings use a 320-unit-wide
viewBox and scale to their container, so at a 390 px phone width the text keeps its design size; every chart has a
``<title>`` and ``<desc>`` for screen readers, and the numbers are also written as text (the legend), so no value
is told by colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 320
FONT = 12
# Colour-blind-safe (Okabe-Ito) order for series without a colour of their own.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


@dataclass(frozen=True)
class Part:
    """One part of a whole: its label, its count and its colour (``#rrggbb``)."""

    label: str
    value: float
    color: str = ""


@dataclass(frozen=True)
class Series:
    """One line: its label, its colour, whether it is dashed, and one value (or None: no data) per x position."""

    label: str
    values: tuple[float | None, ...]
    color: str = ""
    dashed: bool = False


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def duration_label(seconds: float) -> str:
    """Return a short duration: "45 s", "12 min", "3.5 h", "2 d"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        hours = seconds / 3600
        return f"{hours:.1f} h".replace(".0 h", " h")
    return f"{seconds / 86400:.0f} d"


def nice_ceiling(value: float) -> float:
    """Return the smallest of 1, 2, 2.5, 5 × 10ⁿ that is ≥ ``value`` (1 for 0 or less): a readable axis top."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        candidate = step * 10 ** exponent
        if candidate >= value * (1 - 1e-9):
            return float(candidate)
    return float(10 ** (exponent + 1))  # pragma: no cover - the loop always returns


# Axis tops for durations whose half is a round duration too (the middle gridline): 1 s … 2 d, then whole days.
DURATION_TOPS = (2, 4, 10, 20, 30, 60, 120, 240, 600, 1200, 1800, 3600, 7200, 14400, 21600, 43200, 86400, 172800)


def nice_duration_ceiling(seconds: float) -> float:
    """Return the smallest axis top in ``DURATION_TOPS`` that is ≥ ``seconds`` (beyond: whole pairs of days)."""
    for top in DURATION_TOPS:
        if top >= seconds:
            return float(top)
    return float(math.ceil(seconds / 172800) * 172800)


def stacked_bar(parts: Sequence[Part], *, title: str) -> str:
    """Return an SVG of one horizontal bar split into ``parts`` (zero parts left out) with a legend line per part
    ("Running 12 · 40 %"); a bar with no data says so."""
    shown = [part for part in parts if part.value > 0]
    total = sum(part.value for part in shown)
    rows = max(len(shown), 1)
    height = 28 + rows * (FONT + 7) + 6
    desc = ", ".join(f"{part.label} {_num(part.value)}" for part in shown) or "no data"
    out = [f'<svg class="chart chart--mix" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'xmlns="http://www.w3.org/2000/svg" font-size="{FONT}" font-family="inherit">',
           f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>"]
    if not shown:
        out.append(f'<rect x="0" y="4" width="{WIDTH}" height="16" fill="#e5e7eb" rx="3"/>')
        out.append(f'<text x="0" y="{28 + FONT}" fill="currentColor">No data</text></svg>')
        return "".join(out)
    x = 0.0
    for index, part in enumerate(shown):
        color = part.color or PALETTE[index % len(PALETTE)]
        width = WIDTH * part.value / total
        out.append(f'<rect x="{_num(x)}" y="4" width="{_num(max(width, 0.5))}" height="16" fill="{_attr(color)}">'
                   f"<title>{escape(part.label)}: {_num(part.value)}</title></rect>")
        x += width
    for index, part in enumerate(shown):
        color = part.color or PALETTE[index % len(PALETTE)]
        y = 28 + index * (FONT + 7)
        share = 100 * part.value / total
        out.append(f'<rect x="0" y="{y + 1}" width="10" height="10" fill="{_attr(color)}"/>')
        out.append(f'<text x="16" y="{y + FONT - 1}" fill="currentColor">{escape(part.label)}</text>')
        out.append(f'<text x="{WIDTH}" y="{y + FONT - 1}" text-anchor="end" fill="currentColor">'
                   f"{_num(part.value)} · {share:.0f} %</text>")
    out.append("</svg>")
    return "".join(out)


def line_chart(series: Sequence[Series], x_labels: Sequence[str], *, title: str, height: int = 150,
               y_format=duration_label, y_top=nice_duration_ceiling) -> str:
    """Return an SVG line chart of ``series`` over the x positions named by ``x_labels`` (first, middle and last
    are written), y from 0 to ``y_top(max)`` with three gridlines labelled by ``y_format``; a gap where a value is
    None; a legend line per series. Raises ValueError when a series' length differs from the labels'."""
    points = len(x_labels)
    for line in series:
        if len(line.values) != points:
            raise ValueError(f"series {line.label!r} has {len(line.values)} values for {points} x positions")
    values = [v for line in series for v in line.values if v is not None]
    top = y_top(max(values, default=0.0))
    left, right, plot_top = 46, WIDTH - 4, 6
    plot_bottom = height - 18
    legend_height = len(series) * (FONT + 6)
    total_height = height + legend_height + 4
    desc = "; ".join(f"{line.label}: latest {y_format(last)}" for line in series
                     for last in [next((v for v in reversed(line.values) if v is not None), None)]
                     if last is not None) or "no data"
    out = [f'<svg class="chart chart--lines" viewBox="0 0 {WIDTH} {total_height}" width="100%" role="img" '
           f'xmlns="http://www.w3.org/2000/svg" font-size="{FONT}" font-family="inherit">',
           f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>"]

    def x_at(index: int) -> float:
        return left + (right - left) * (index / (points - 1) if points > 1 else 0.5)

    def y_at(value: float) -> float:
        return plot_bottom - (plot_bottom - plot_top) * (value / top)

    for fraction in (0, 0.5, 1):
        y = y_at(top * fraction)
        out.append(f'<line x1="{left}" x2="{right}" y1="{_num(y)}" y2="{_num(y)}" stroke="#d1d5db" '
                   f'stroke-width="1"/>')
        out.append(f'<text x="{left - 4}" y="{_num(y + 4)}" text-anchor="end" fill="currentColor">'
                   f"{escape(y_format(top * fraction))}</text>")
    for index in sorted({0, (points - 1) // 2, points - 1} if points else set()):
        anchor = "start" if index == 0 else "end" if index == points - 1 else "middle"
        out.append(f'<text x="{_num(x_at(index))}" y="{height - 4}" text-anchor="{anchor}" fill="currentColor">'
                   f"{escape(x_labels[index])}</text>")
    if not values:
        out.append(f'<text x="{(left + right) // 2}" y="{(plot_top + plot_bottom) // 2}" text-anchor="middle" '
                   'fill="currentColor">No data</text>')
    for number, line in enumerate(series):
        color = line.color or PALETTE[number % len(PALETTE)]
        dash = ' stroke-dasharray="4 3"' if line.dashed else ""
        segment: list[str] = []
        segments: list[list[str]] = []
        for index, value in enumerate(line.values):
            if value is None:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{_num(x_at(index))},{_num(y_at(value))}")
        if segment:
            segments.append(segment)
        for part in segments:
            if len(part) == 1:
                x, y = part[0].split(",")
                out.append(f'<circle cx="{x}" cy="{y}" r="2.5" fill="{_attr(color)}"/>')
            else:
                out.append(f'<polyline points="{" ".join(part)}" fill="none" stroke="{_attr(color)}" '
                           f'stroke-width="2"{dash}/>')
        y = height + 4 + number * (FONT + 6)
        out.append(f'<line x1="0" x2="14" y1="{y + 5}" y2="{y + 5}" stroke="{_attr(color)}" stroke-width="2"{dash}/>')
        out.append(f'<text x="20" y="{y + FONT - 1}" fill="currentColor">{escape(line.label)}</text>')
    out.append("</svg>")
    return "".join(out)
