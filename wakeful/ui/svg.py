"""Charts as inline SVG, drawn on the server: no script, nothing fetched from elsewhere.

Every shape carries a ``<title>`` (the browser's tooltip) with its exact number, and each
chart a ``data-*`` attribute per part, so a test reads the drawn values back from the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Colour-blind-safe (Tableau 10) hues, one per segment and per cache state.
COLOURS = {
    "stable": "#4e79a7",
    "semi_stable": "#76b7b2",
    "summaries": "#b07aa1",
    "recent": "#f28e2b",
    "evidence": "#edc948",
    "ask": "#e15759",
    "overhead": "#bab0ac",
    "cache_read": "#59a14f",
    "cache_write": "#f28e2b",
    "uncached": "#9c755f",
    "output": "#bab0ac",
}
_OTHERS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")


def colour(name: str, n: int = 0) -> str:
    return COLOURS.get(name, _OTHERS[n % len(_OTHERS)])


@dataclass(frozen=True)
class Part:
    name: str
    value: int | float
    label: str = ""  # the tooltip; the name and value when empty


@dataclass(frozen=True)
class Mark:
    """A vertical marker across a bar, e.g. a cache breakpoint at a prefix length."""

    at: int | float
    label: str


def stacked_bar(
    parts: Sequence[Part],
    *,
    chart_id: str,
    title: str,
    marks: Sequence[Mark] = (),
    width: int = 960,
) -> Markup:
    """One horizontal bar split into ``parts`` in proportion, with a legend beneath and
    optional ``marks`` drawn across it at their position on the same scale."""
    total = sum(p.value for p in parts) or 1
    bar_y, bar_h = 22 if marks else 6, 34
    legend_y = bar_y + bar_h + 22
    rows = (len(parts) + 3) // 4
    height = legend_y + 20 * rows
    out = [
        Markup(
            '<svg id="{}" class="chart bar" role="img" viewBox="0 0 {} {}" width="100%"'
            ' preserveAspectRatio="xMinYMin meet" data-total="{}"><title>{}</title>'
        ).format(chart_id, width, height, _raw(sum(p.value for p in parts)), title)
    ]
    x = 0.0
    for n, p in enumerate(parts):
        w = p.value / total * width
        tip = p.label or f"{p.name}: {_num(p.value)}"
        if w > 0:
            out.append(
                Markup(
                    '<rect class="part" data-part="{}" data-value="{}" x="{:.2f}" y="{}"'
                    ' width="{:.2f}" height="{}" fill="{}"><title>{}</title></rect>'
                ).format(p.name, _raw(p.value), x, bar_y, w, bar_h, colour(p.name, n), tip)
            )
            if w > 60:  # the number inside the segment when it fits
                out.append(
                    Markup(
                        '<text x="{:.2f}" y="{}" class="inbar" text-anchor="middle">{}</text>'
                    ).format(x + w / 2, bar_y + bar_h / 2 + 5, _short(p.value))
                )
        x += w
    for m in marks:
        mx = min(max(m.at / total * width, 1), width - 1)
        anchor = "end" if mx > width * 0.8 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(
            Markup(
                '<g class="mark" data-mark="{}" data-at="{}"><line x1="{:.2f}" x2="{:.2f}" y1="4"'
                ' y2="{}" stroke="#222" stroke-width="2" stroke-dasharray="4 3"/>'
                '<text x="{:.2f}" y="14" text-anchor="{}" class="marklabel">{}</text>'
                "<title>breakpoint {} at {} tokens</title></g>"
            ).format(
                m.label,
                _raw(m.at),
                mx,
                mx,
                bar_y + bar_h + 4,
                mx + dx,
                anchor,
                m.label,
                m.label,
                _num(m.at),
            )
        )
    for n, p in enumerate(parts):
        lx, ly = (n % 4) * (width / 4), legend_y + (n // 4) * 20
        out.append(
            Markup(
                '<rect x="{:.2f}" y="{}" width="12" height="12" fill="{}"/>'
                '<text x="{:.2f}" y="{}" class="legend">{} {}</text>'
            ).format(lx, ly - 10, colour(p.name, n), lx + 18, ly, p.name, _num(p.value))
        )
    out.append(Markup("</svg>"))
    return Markup("").join(out)


@dataclass(frozen=True)
class Column:
    """One column of a column chart: its label and its stacked parts (bottom first)."""

    label: str
    parts: Sequence[Part]


def column_chart(
    columns: Sequence[Column],
    *,
    chart_id: str,
    title: str,
    unit: str = "",
    width: int = 960,
    height: int = 260,
) -> Markup:
    """Vertical stacked columns (e.g. per day), a value axis and a legend of part names."""
    top = max((sum(p.value for p in c.parts) for c in columns), default=0) or 1
    left, bottom, plot_top = 70, 40, 16
    plot_h = height - bottom - plot_top
    names = list(dict.fromkeys(p.name for c in columns for p in c.parts))
    legend_h = 20 * ((len(names) + 3) // 4)
    step = (width - left - 10) / max(len(columns), 1)
    bar_w = min(step * 0.6, 80)
    out = [
        Markup(
            '<svg id="{}" class="chart columns" role="img" viewBox="0 0 {} {}" width="100%"'
            ' preserveAspectRatio="xMinYMin meet"><title>{}</title>'
        ).format(chart_id, width, height + legend_h + 10, title)
    ]
    for k in range(5):  # grid lines and their values
        v = top * k / 4
        y = plot_top + plot_h - plot_h * k / 4
        out.append(
            Markup(
                '<line x1="{}" x2="{}" y1="{:.2f}" y2="{:.2f}" stroke="#ddd"/>'
                '<text x="{}" y="{:.2f}" text-anchor="end" class="axis">{}{}</text>'
            ).format(left, width - 10, y, y, left - 6, y + 4, unit, _axis(v))
        )
    for n, c in enumerate(columns):
        x = left + n * step + (step - bar_w) / 2
        y = float(plot_top + plot_h)
        for p in c.parts:
            h = p.value / top * plot_h
            if h <= 0:
                continue
            y -= h
            tip = p.label or f"{c.label} {p.name}: {unit}{_num(p.value)}"
            out.append(
                Markup(
                    '<rect class="part" data-column="{}" data-part="{}" data-value="{}"'
                    ' x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">'
                    "<title>{}</title></rect>"
                ).format(
                    c.label,
                    p.name,
                    _raw(p.value),
                    x,
                    y,
                    bar_w,
                    h,
                    colour(p.name, names.index(p.name)),
                    tip,
                )
            )
        out.append(
            Markup('<text x="{:.2f}" y="{}" text-anchor="middle" class="axis">{}</text>').format(
                x + bar_w / 2, plot_top + plot_h + 18, c.label
            )
        )
    for n, name in enumerate(names):
        lx, ly = left + (n % 4) * ((width - left) / 4), height + 10 + (n // 4) * 20
        out.append(
            Markup(
                '<rect x="{:.2f}" y="{}" width="12" height="12" fill="{}"/>'
                '<text x="{:.2f}" y="{}" class="legend">{}</text>'
            ).format(lx, ly - 10, colour(name, n), lx + 18, ly, name)
        )
    out.append(Markup("</svg>"))
    return Markup("").join(out)


def _raw(v: int | float) -> str:
    """A value as a test reads it back: exact, without thousands separators."""
    return str(v) if isinstance(v, int) else repr(float(v))


def _num(v: int | float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:.6f}"


def _short(v: int | float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:.4f}"


def _axis(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.4g}"


__all__ = ["Column", "Mark", "Part", "column_chart", "escape", "stacked_bar"]
