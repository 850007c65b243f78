"""Minimal SVG charts for the report, drawn from the plot rows.

Our own few lines instead of matplotlib: the bytes depend only on the rows (no random
ids, no timestamps, no font metrics), so the same params give the same files, and the
report renders on GitHub without DVC. Numbers are written with one decimal."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

COLORS = {"current": "#2e7d32", "conflict": "#f9a825", "stale": "#c62828",
          "missing": "#9e9e9e", "leaked": "#6a1b9a", "clean": "#90caf9"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def _n(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


class _Svg:
    def __init__(self, width: float, height: float, title: str) -> None:
        self.parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" '
                      f'height="{_n(height)}" viewBox="0 0 {_n(width)} {_n(height)}">'),
                      f'<rect width="{_n(width)}" height="{_n(height)}" fill="white"/>']
        self.text(width / 2, 18, title, anchor="middle", size=14)

    def text(self, x: float, y: float, text: str, anchor: str = "start", size: int = 11,
             rotate: bool = False) -> None:
        turn = f' transform="rotate(-90 {_n(x)} {_n(y)})"' if rotate else ""
        self.parts.append(f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" '
                          f'font-family="sans-serif" font-size="{size}"{turn}>'
                          f"{escape(text)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = "#333") -> None:
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                          f'stroke="{color}" stroke-width="1"/>')

    def rect(self, x: float, y: float, w: float, h: float, color: str) -> None:
        self.parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
                          f'fill="{color}"/>')

    def legend(self, x: float, y: float, entries: Sequence[tuple[str, str]]) -> None:
        for i, (label, color) in enumerate(entries):
            self.rect(x, y + 16 * i - 9, 10, 10, color)
            self.text(x + 14, y + 16 * i, label)

    def done(self) -> str:
        return "\n".join(self.parts + ["</svg>"]) + "\n"


def cost_quality_svg(rows: Sequence[dict], probes: int) -> str:
    """Scatter: mean injected tokens (log scale) against current-only probes."""
    left, top, width, height = 60, 40, 520, 360
    svg = _Svg(left + width + 320, top + height + 50,
               "Cost versus quality: mean injected tokens (log) vs current-only probes")
    xs = [max(r["mean_injected_tokens"], 1.0) for r in rows]
    low, high = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    high = max(high, low + 1)

    def px(x: float) -> float:
        return left + (math.log10(max(x, 1.0)) - low) / (high - low) * width

    def py(y: float) -> float:
        return top + height - y / max(probes, 1) * height

    svg.line(left, top + height, left + width, top + height)
    svg.line(left, top, left, top + height)
    for power in range(low, high + 1):
        svg.line(px(10 ** power), top + height, px(10 ** power), top + height + 4)
        svg.text(px(10 ** power), top + height + 16, f"{10 ** power:,}", anchor="middle")
    for tick in range(0, probes + 1, max(1, probes // 4)):
        svg.line(left - 4, py(tick), left, py(tick))
        svg.text(left - 6, py(tick) + 4, str(tick), anchor="end")
    svg.text(left + width / 2, top + height + 34, "mean injected tokens per probe (log)",
             anchor="middle")
    svg.text(16, top + height / 2, f"current-only probes (of {probes})", anchor="middle",
             rotate=True)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    color = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(policies)}
    for r in rows:
        x, y, c = px(r["mean_injected_tokens"]), py(r["current"]), color[r["policy"]]
        if r["form"] == "literal":
            svg.parts.append(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="5" fill="{c}"/>')
        else:
            svg.parts.append(f'<rect x="{_n(x - 4)}" y="{_n(y - 4)}" width="8" height="8" '
                             f'fill="none" stroke="{c}" stroke-width="2"/>')
    svg.legend(left + width + 20, top + 10, [(p, color[p]) for p in policies])
    svg.text(left + width + 20, top + 10 + 16 * len(policies) + 10,
             "filled circle: literal, open square: paraphrase")
    return svg.done()


def outcome_bars_svg(rows: Sequence[dict]) -> str:
    """Horizontal stacked bars: outcome counts per policy and form."""
    bars = list(dict.fromkeys(r["bar"] for r in rows))
    outcomes = list(dict.fromkeys(r["outcome"] for r in rows))
    totals = {b: sum(r["probes"] for r in rows if r["bar"] == b) for b in bars}
    scale_max = max(totals.values(), default=1) or 1
    left, top, width, bar_h = 250, 40, 420, 18
    svg = _Svg(left + width + 120, top + len(bars) * (bar_h + 4) + 40,
               "Outcomes per policy and probe form")
    for i, bar in enumerate(bars):
        y, x = top + i * (bar_h + 4), float(left)
        svg.text(left - 6, y + 13, bar, anchor="end")
        for r in rows:
            if r["bar"] == bar and r["probes"]:
                w = r["probes"] / scale_max * width
                svg.rect(x, y, w, bar_h, COLORS.get(r["outcome"], "#000"))
                x += w
    axis = top + len(bars) * (bar_h + 4)
    for tick in range(0, scale_max + 1, max(1, scale_max // 4)):
        svg.text(left + tick / scale_max * width, axis + 14, str(tick), anchor="middle")
    svg.legend(left + width + 16, top + 10, [(o, COLORS.get(o, "#000")) for o in outcomes])
    return svg.done()


def by_day_svg(rows: Sequence[dict]) -> str:
    """Small multiples: for each policy, stacked outcome columns per checkpoint day."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    days = sorted({r["day"] for r in rows})
    outcomes = list(dict.fromkeys(r["outcome"] for r in rows))
    totals = [sum(r["probes"] for r in rows if r["policy"] == p and r["day"] == d)
              for p in policies for d in days]
    scale_max = max(totals, default=1) or 1
    cols, panel_w, panel_h, pad = 2, 300, 130, 40
    rows_n = math.ceil(len(policies) / cols)
    svg = _Svg(cols * (panel_w + pad) + 120, 40 + rows_n * (panel_h + pad),
               "Outcomes per checkpoint day (both probe forms)")
    column_w = (panel_w - 40) / max(len(days), 1)
    for i, policy in enumerate(policies):
        x0 = pad + (i % cols) * (panel_w + pad)
        y0 = 40 + (i // cols) * (panel_h + pad)
        base = y0 + panel_h - 20
        svg.text(x0, y0 + 10, policy)
        svg.line(x0, base, x0 + panel_w - 20, base)
        svg.text(x0 - 4, y0 + 24, str(scale_max), anchor="end")
        for j, day in enumerate(days):
            x, y = x0 + 10 + j * column_w, float(base)
            for r in rows:
                if r["policy"] == policy and r["day"] == day and r["probes"]:
                    h = r["probes"] / scale_max * (panel_h - 40)
                    y -= h
                    svg.rect(x, y, column_w * 0.7, h, COLORS.get(r["outcome"], "#000"))
            svg.text(x + column_w * 0.35, base + 14, f"day {day}", anchor="middle")
    svg.legend(cols * (panel_w + pad) + 10, 60, [(o, COLORS.get(o, "#000")) for o in outcomes])
    return svg.done()
