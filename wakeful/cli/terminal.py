"""What the inspecting commands draw in a terminal: a legend, a bar of the window by segment,
tables and a panel, with rich.

Rich writes plain text when stdout is not a terminal (a pipe, a file, a test's capture): no
escape codes, the same characters. Each segment of the bar has a fill character of its own,
so it reads without colour too. Imported by the commands that print with it, never at
``wakeful --help``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from wakeful.compiler import LedgerDiff, LedgerRow
    from wakeful.substrate.records import ModelCallRecord, WakeRecord

# The window's segments in window order: (fill, colour). Framing first, as the console's bar.
SEGMENTS: dict[str, tuple[str, str]] = {
    "overhead": ("·", "grey50"),
    "stable": ("█", "blue"),
    "semi_stable": ("▓", "cyan"),
    "summaries": ("▒", "magenta"),
    "recent": ("░", "dark_orange"),
    "evidence": ("▄", "yellow"),
    "ask": ("▀", "red"),
}
_OTHER = ("■", "white")

LEGEND = (
    "stable = instructions, tools, durable facts (cached once) · "
    "semi_stable = decisions, memories, handoff note · "
    "recent = this session's turns and tools · "
    "evidence = retrieved from earlier sessions · "
    "c.read / c.write = input tokens read from / written to the prompt cache"
)

# Width of a piped (not a terminal) rendering when COLUMNS does not say: wide enough that
# the ledger's reasons are not wrapped into a column a few characters wide.
PIPE_WIDTH = 160


def console() -> Console:
    """A console on stdout: styled in a terminal, plain text elsewhere."""
    from rich.console import Console

    out = Console(highlight=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(highlight=False, width=PIPE_WIDTH)
    return out


def legend() -> Text:
    """One line (print it with ``soft_wrap=True``: a terminal wraps it, rich does not)."""
    from rich.text import Text

    return Text("legend: " + LEGEND, style="dim")


def _widths(values: Sequence[int], width: int) -> list[int]:
    """Characters per value in proportion, summing to ``width``, at least 1 for any value
    above zero (largest remainders get the characters rounding left over)."""
    total = sum(values)
    if total <= 0:
        return [0] * len(values)
    width = max(width, sum(1 for v in values if v > 0))  # a narrow terminal: one each
    exact = [v / total * width for v in values]
    out = [max(int(e), 1 if v > 0 else 0) for e, v in zip(exact, values, strict=True)]
    by_remainder = sorted(range(len(values)), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    i = 0
    while sum(out) < width and by_remainder:
        if values[by_remainder[i % len(values)]] > 0:
            out[by_remainder[i % len(values)]] += 1
        i += 1
    while sum(out) > width:  # the minimums overran: take from the widest
        out[out.index(max(out))] -= 1
    return out


def segment_bar(by_bucket: dict[str, int], width: int = 100) -> Text:
    """``window [██ stable 1,200 ██▓▓░░ recent 149 ░░]`` and beneath it every segment with
    its fill and tokens (a segment too narrow for its label is still named there)."""
    from rich.text import Text

    names = [*SEGMENTS, *sorted(k for k in by_bucket if k not in SEGMENTS)]
    parts = [(k, by_bucket[k]) for k in names if by_bucket.get(k)]
    widths = _widths([v for _, v in parts], width)
    bar = Text("window ")
    bar.append("▕")
    for (name, value), w in zip(parts, widths, strict=True):
        fill, colour = SEGMENTS.get(name, _OTHER)
        label = f" {name} {value:,} "
        if len(label) + 2 <= w:
            left = (w - len(label)) // 2
            bar.append(fill * left, style=colour)
            bar.append(label, style=f"bold white on {colour}")
            bar.append(fill * (w - left - len(label)), style=colour)
        else:
            bar.append(fill * w, style=colour)
    bar.append("▏ " + f"{sum(v for _, v in parts):,} tokens")
    key = Text("       ")
    for name, value in parts:
        fill, colour = SEGMENTS.get(name, _OTHER)
        key.append(fill, style=colour)
        key.append(f" {name} {value:,}   ")
    key.rstrip()
    return Text("\n").join([bar, key])


def cache_line(call: ModelCallRecord | None) -> Text:
    """What the provider reported for the call: c.read, c.write, uncached, output, cost."""
    from rich.text import Text

    if call is None:
        return Text("cache  the model call was not recorded", style="dim")
    out = Text("cache  ")
    out.append(f"c.read {call.cache_read_input_tokens:,}", style="green")
    out.append(" · ")
    out.append(f"c.write {call.cache_creation_input_tokens:,}", style="dark_orange")
    out.append(
        f" · uncached {call.input_tokens:,} · output {call.output_tokens:,} · ${call.cost_usd:.4f}"
    )
    return out


_STATUS_STYLE = {"included": "green", "excluded": "dim", "collapsed": "yellow"}


def ledger_table(rows: Sequence[LedgerRow]) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    table.add_column("pos", justify="right")
    table.add_column("block", no_wrap=True, max_width=34, overflow="ellipsis")
    table.add_column("kind", no_wrap=True)
    table.add_column("tokens", justify="right")
    table.add_column("segment", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("reason", ratio=1)
    for r in rows:
        # Text cells: a block id or reason with brackets in it is not read as markup.
        fill, colour = SEGMENTS.get(r.segment, _OTHER)
        segment = Text(fill, style=colour)
        segment.append(f" {r.segment}")
        table.add_row(
            str(r.position) if r.position >= 0 else "-",
            Text(r.block_id),
            Text(r.kind),
            f"{r.tokens:,}",
            segment,
            Text(r.status, style=_STATUS_STYLE.get(r.status, "")),
            Text(
                r.reason
                + (f" ({r.rule})" if r.rule else "")
                + (f" — {r.detail}" if r.detail else "")
            ),
        )
    return table


def diff_panel(d: LedgerDiff, outcome: str | None = None) -> Panel:
    """The first difference and whether the cache could hit, in a small panel; ``outcome``
    is the later call's cache outcome line, when it was made."""
    from rich.panel import Panel
    from rich.text import Text

    body = Text()
    body.append(f"position {d.position}", style="bold")
    body.append(f": block {d.block_id} ({d.segment})\n")
    body.append(f"{d.reason} {d.detail}".rstrip() + "\n")
    if d.cache_could_hit:
        body.append(
            f"cache could hit through '{d.cache_hit_through}' ({d.cached_prefix_tokens} tokens)",
            style="green",
        )
    else:
        body.append("no cached prefix could be reused", style="red")
    if outcome is not None:
        body.append("\n" + outcome)
    return Panel(body, title="first difference", title_align="left", expand=False)


def wakes_table(wakes: Sequence[tuple[WakeRecord, Sequence[ModelCallRecord]]]) -> Table:
    """An agent's wakes with their calls, tokens, cache split and cost, and a bar of the
    cost against the costliest wake."""
    from rich import box
    from rich.bar import Bar
    from rich.table import Table
    from rich.text import Text

    costs = [sum(c.cost_usd for c in calls) for _, calls in wakes]
    top = max(costs, default=0.0) or 1.0
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, right in (
        ("wake", True),
        ("session", False),
        ("status", False),
        ("started (UTC)", False),
        ("calls", True),
        ("c.read", True),
        ("c.write", True),
        ("uncached", True),
        ("cost", True),
    ):
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    table.add_column("cost bar", no_wrap=True, width=24)
    for (w, calls), cost in zip(wakes, costs, strict=True):
        status_style = "green" if w.status == "done" else "red" if w.status != "running" else ""
        table.add_row(
            str(w.number),
            Text(w.session_id),
            Text(w.status, style=status_style),
            f"{w.started_at:%Y-%m-%d %H:%M}",
            str(len(calls)),
            f"{sum(c.cache_read_input_tokens for c in calls):,}",
            f"{sum(c.cache_creation_input_tokens for c in calls):,}",
            f"{sum(c.input_tokens for c in calls):,}",
            f"${cost:.4f}",
            Bar(top, 0, cost, width=24, color="cyan"),
        )
    return table
