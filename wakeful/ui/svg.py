"""Charts as inline SVG, drawn on the server: no script, nothing fetched from elsewhere.

Every shape carries a ``<title>`` (the browser's tooltip) with its exact number, and each
chart a ``data-*`` attribute per part, so a test reads the drawn values back from the page.
"""

from __future__ import annotations

import math
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
    caption: str = ""  # what the legend calls it; the name when empty

    @property
    def shown(self) -> str:
        return self.caption or self.name


@dataclass(frozen=True)
class Mark:
    """A vertical marker across a bar, e.g. a cache breakpoint at a prefix length."""

    at: int | float
    label: str


_CHAR_W = 7.2  # about the width of a 12px label's character, to keep labels apart


def _label_rows(xs: Sequence[tuple[float, str]], width: int) -> list[int]:
    """A row per label so that labels drawn at ``x`` (anchored at the end near the right
    edge) do not overlap their neighbours: the first row where the previous label ended."""
    ends: list[float] = []  # per row, where its last label ends
    rows = []
    for x, label in xs:
        w = len(label) * _CHAR_W + 8
        start = x - w if x > width * 0.8 else x
        row = next((r for r, end in enumerate(ends) if start > end), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = start + w
        rows.append(row)
    return rows


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
    # By position alone: marks on one pixel keep their order (a Mark does not compare).
    placed = sorted(
        ((min(max(m.at / total * width, 1), width - 1), m) for m in marks),
        key=lambda xm: xm[0],
    )
    label_rows = _label_rows([(x, m.label) for x, m in placed], width)
    bar_y, bar_h = 8 + 14 * (max(label_rows) + 1 if label_rows else 0), 34
    legend_y = bar_y + bar_h + 22
    height = legend_y + 20 * ((len(parts) + 3) // 4)
    out = [
        Markup(
            '<svg id="{}" class="chart bar" role="img" viewBox="0 0 {} {}" width="100%"'
            ' preserveAspectRatio="xMinYMin meet" data-total="{}"><title>{}</title>'
        ).format(chart_id, width, height, _raw(sum(p.value for p in parts)), title)
    ]
    x = 0.0
    for n, p in enumerate(parts):
        w = p.value / total * width
        if w > 0:
            out.append(
                Markup(
                    '<rect class="part" data-part="{}" data-value="{}" x="{:.2f}" y="{}"'
                    ' width="{:.2f}" height="{}" fill="{}"><title>{}: {}</title></rect>'
                ).format(
                    p.name,
                    _raw(p.value),
                    x,
                    bar_y,
                    w,
                    bar_h,
                    colour(p.name, n),
                    p.shown,
                    _num(p.value),
                )
            )
            if w > 60:  # the number inside the segment when it fits
                out.append(
                    Markup(
                        '<text x="{:.2f}" y="{}" class="inbar" text-anchor="middle">{}</text>'
                    ).format(x + w / 2, bar_y + bar_h / 2 + 5, _short(p.value))
                )
        x += w
    for (mx, m), row in zip(placed, label_rows, strict=True):
        end = mx > width * 0.8
        ly = 14 + 14 * row
        out.append(
            Markup(
                '<g class="mark" data-mark="{}" data-at="{}"><line x1="{:.2f}" x2="{:.2f}"'
                ' y1="{}" y2="{}" stroke="#222" stroke-width="1.5" stroke-dasharray="4 3"/>'
                '<text x="{:.2f}" y="{}" text-anchor="{}" class="marklabel">{}</text>'
                "<title>breakpoint {} at {} tokens</title></g>"
            ).format(
                m.label,
                _raw(m.at),
                mx,
                mx,
                ly + 3,
                bar_y + bar_h + 4,
                mx - 4 if end else mx + 4,
                ly,
                "end" if end else "start",
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
            ).format(lx, ly - 10, colour(p.name, n), lx + 18, ly, p.shown, _num(p.value))
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
    top = _nice(max((sum(p.value for p in c.parts) for c in columns), default=0))
    left, bottom, plot_top = 70, 40, 16
    plot_h = height - bottom - plot_top
    names = list(dict.fromkeys(p.name for c in columns for p in c.parts))
    captions = {p.name: p.shown for c in columns for p in c.parts}
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
            ).format(left, width - 10, y, y, left - 6, y + 4, unit, _axis(v, top))
        )
    for n, c in enumerate(columns):
        x = left + n * step + (step - bar_w) / 2
        y = float(plot_top + plot_h)
        for p in c.parts:
            h = p.value / top * plot_h
            if h <= 0:
                continue
            y -= h
            tip = f"{c.label} {p.shown}: {unit}{_num(p.value)}"
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
            ).format(lx, ly - 10, colour(name, n), lx + 18, ly, captions[name])
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


def _nice(v: float) -> float:
    """The smallest round number (1, 1.2, 1.6, 2, ... 8 times a power of ten) at or above
    ``v``: the axis top, so its four grid steps are round numbers too."""
    if v <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(v))
    return next(
        m * power for m in (1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8, 10) if m * power >= v * (1 - 1e-9)
    )


def _axis(v: float, top: float) -> str:
    """A grid value, with as many decimals as the grid's step needs."""
    decimals = max(0, 1 - math.floor(math.log10(top / 4))) if top < 40 else 0
    return f"{v:,.{decimals}f}"


# --- a session's cache timeline ------------------------------------------------------------

# One hue per cache outcome class (Tableau 10 again); "unknown": no call was recorded.
CLASS_COLOURS = {
    "hit": "#17becf",
    "cold_start": "#4e79a7",
    "prefix_changed": "#e15759",
    "ttl_expired": "#b07aa1",
    "below_minimum": "#ff9da7",
    "beyond_lookback": "#f28e2b",
    "provider_eviction": "#7f7f7f",
    "unknown": "#bab0ac",
}
TTL_BAND = "#a0cbe8"  # the span a call's cache entry stays warm
_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


@dataclass(frozen=True)
class TimedCall:
    """A model call on the session's time axis (``at``: seconds since its first call)."""

    key: str  # e.g. "#2·0": wake number and call
    at: float
    cache_class: str
    read: int
    write: int
    uncached: int
    ttl: float | None  # seconds the entry it left stays warm
    tip: str


@dataclass(frozen=True)
class TimedEvent:
    """A pacing decision or a keep-warm call on the same axis."""

    kind: str  # "pacing" | "keep-warm"
    at: float
    label: str
    tip: str


def _span(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m" + (f"{s % 60:02d}s" if s % 60 else "")
    return f"{s // 3600}h" + (f"{s % 3600 // 60:02d}m" if s % 3600 else "")


def session_timeline(
    calls: Sequence[TimedCall],
    events: Sequence[TimedEvent],
    *,
    chart_id: str,
    title: str,
    width: int = 1200,
) -> Markup:
    """Calls as marks on a time axis coloured by cache class, the TTL each left as a band
    after it, pacing decisions and keep-warm calls on a lane of their own; below, each
    call's cache read / write / uncached input as a small stacked bar, in call order and
    tied to its mark (calls seconds apart still get a readable bar each)."""
    left, right = 110, width - 20
    plot = right - left
    end = max([1.0] + [c.at + (c.ttl or 0.0) for c in calls] + [e.at for e in events])
    step = next((s for s in _STEPS if end / s <= 8), _STEPS[-1])

    def x(at: float) -> float:
        return left + at / end * plot

    band_y, band_h, rows = 10, 9, 4
    mark_y = band_y + rows * (band_h + 3) + 14
    event_y = mark_y + 24
    axis_y = event_y + 18
    bar_top, bar_h = axis_y + 56, 110
    label_y = bar_top + bar_h + 16
    legend_y = label_y + 44
    out = [
        Markup(
            '<svg id="{}" class="chart timeline" role="img" viewBox="0 0 {} {}" width="100%"'
            ' preserveAspectRatio="xMinYMin meet" data-end="{}"><title>{}</title>'
        ).format(chart_id, width, legend_y + 50, _raw(end), title)
    ]
    for y, lane in (
        (band_y + 10, "TTL left warm"),
        (mark_y + 4, "calls"),
        (event_y + 4, "pacing, pings"),
    ):
        out.append(Markup('<text x="4" y="{}" class="axis">{}</text>').format(y, lane))
    for n, c in enumerate(calls):
        if c.ttl:
            y = band_y + (n % rows) * (band_h + 3)
            out.append(
                Markup(
                    '<rect class="ttl" data-call="{}" data-ttl="{}" x="{:.2f}" y="{}"'
                    ' width="{:.2f}" height="{}" fill="{}" fill-opacity="0.35" stroke="{}">'
                    "<title>{}: warm for {} after the call (until +{})</title></rect>"
                ).format(
                    c.key, _raw(c.ttl), x(c.at), y, c.ttl / end * plot, band_h,
                    TTL_BAND, "#4e79a7", c.key, _span(c.ttl),
                    _span(c.at + c.ttl),
                )
            )  # fmt: skip
    # The axis, its ticks, and the lanes' guide line.
    out.append(
        Markup('<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#5b6475"/>').format(
            left, right, axis_y, axis_y
        )
    )
    t = 0.0
    while t <= end + 1e-9:
        out.append(
            Markup(
                '<line x1="{:.2f}" x2="{:.2f}" y1="{}" y2="{}" stroke="#dde1e8"/>'
                '<text x="{:.2f}" y="{}" text-anchor="middle" class="axis">+{}</text>'
            ).format(x(t), x(t), band_y, axis_y + 4, x(t), axis_y + 16, _span(t))
        )
        t += step
    for e in events:
        ex = x(e.at)
        shape = (
            Markup('<path d="M{:.2f} {} l6 6 l-6 6 l-6 -6 z" fill="#1d2330"/>').format(
                ex, event_y - 6
            )
            if e.kind == "pacing"
            else Markup('<path d="M{:.2f} {} l6 11 l-12 0 z" fill="#f28e2b"/>').format(
                ex, event_y - 6
            )
        )
        out.append(
            Markup('<g class="{}" data-label="{}" data-at="{}">{}<title>{}</title></g>').format(
                e.kind, e.label, _raw(e.at), shape, e.tip
            )
        )
    top = max([c.read + c.write + c.uncached for c in calls] + [1])
    slot = plot / max(len(calls), 1)
    bar_w = min(slot * 0.6, 40)
    every = max(1, math.ceil(48 / slot))  # a key such as "#12·3" is about 40 units wide
    for n, c in enumerate(calls):
        colour_of = CLASS_COLOURS.get(c.cache_class, CLASS_COLOURS["unknown"])
        cx, bx = x(c.at), left + n * slot + slot / 2
        stack_y = float(bar_top + bar_h)
        for name, value in (("cache_read", c.read), ("cache_write", c.write),
                            ("uncached", c.uncached)):  # fmt: skip
            h = value / top * bar_h
            if h <= 0:
                continue
            stack_y -= h
            out.append(
                Markup(
                    '<rect class="part" data-column="{}" data-part="{}" data-value="{}"'
                    ' x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">'
                    "<title>{} {}: {}</title></rect>"
                ).format(
                    c.key, name, _raw(value), bx - bar_w / 2, stack_y, bar_w, h, colour(name),
                    c.key, name.replace("_", " "), _num(value),
                )
            )  # fmt: skip
        # A cap in the call's class colour on its bar, tied to its mark on the time axis.
        out.append(
            Markup(
                '<line class="tie" x1="{:.2f}" y1="{}" x2="{:.2f}" y2="{:.2f}" stroke="{}"'
                ' stroke-width="1.2" stroke-opacity="0.8"/>'
                '<rect x="{:.2f}" y="{:.2f}" width="{:.2f}" height="5" fill="{}"/>'
                '<circle class="call" data-call="{}" data-class="{}" data-at="{}" cx="{:.2f}"'
                ' cy="{}" r="6" fill="{}" stroke="#fff"><title>{}</title></circle>'
            ).format(
                cx, mark_y + 6, bx, stack_y - 6, colour_of,
                bx - bar_w / 2, stack_y - 6, bar_w, colour_of,
                c.key, c.cache_class, _raw(c.at), cx, mark_y, colour_of, c.tip,
            )
        )  # fmt: skip
        # Labels where they fit: every call's key when slots are wide enough, else every
        # ``every``-th; the read/write numbers only under wide bars.
        if n % every == 0:
            out.append(
                Markup('<text x="{:.2f}" y="{}" text-anchor="middle" class="axis">{}</text>')
                .format(bx, label_y, c.key)
            )  # fmt: skip
        if slot >= 130:
            out.append(
                Markup('<text x="{:.2f}" y="{}" text-anchor="middle" class="axis">{}</text>')
                .format(bx, label_y + 14, f"r {_short(c.read)} · w {_short(c.write)}")
            )  # fmt: skip
    keys = [
        *((k, CLASS_COLOURS[k], f"call: {k}") for k in CLASS_COLOURS
          if any(c.cache_class == k for c in calls)),
        *((k, colour(k), k.replace("_", " ")) for k in ("cache_read", "cache_write", "uncached")),
        ("ttl", TTL_BAND, "TTL left warm"),
        ("pacing", "#1d2330", "pacing decision"),
        ("keep-warm", "#f28e2b", "keep-warm call"),
    ]  # fmt: skip
    per_row = 5
    for n, (_, fill, caption) in enumerate(keys):
        lx, ly = left + (n % per_row) * (plot / per_row), legend_y + (n // per_row) * 20
        out.append(
            Markup(
                '<rect x="{:.2f}" y="{}" width="12" height="12" fill="{}"/>'
                '<text x="{:.2f}" y="{}" class="legend">{}</text>'
            ).format(lx, ly - 10, fill, lx + 18, ly, caption)
        )
    out.append(Markup("</svg>"))
    return Markup("").join(out)


__all__ = [
    "Column",
    "Mark",
    "Part",
    "TimedCall",
    "TimedEvent",
    "column_chart",
    "escape",
    "session_timeline",
    "stacked_bar",
]
