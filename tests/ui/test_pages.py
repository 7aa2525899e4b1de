"""The pages as functions of what they are given: whatever the substrate holds (an answer,
a tool's output, a block id) is text on the page, never markup."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.ui.dom import parse, parts
from wakeful.substrate.records import ModelCallRecord, WakeRecord
from wakeful.ui import data, pages
from wakeful.ui.svg import Mark, Part, stacked_bar

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_text_from_the_substrate_is_escaped() -> None:
    wake = WakeRecord(
        wake_id=f"{HOSTILE}:1",
        agent=HOSTILE,
        session_id=HOSTILE,
        workflow_id="wf",
        number=1,
        goal={},
        status="done",
        started_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    call = ModelCallRecord(
        agent=HOSTILE, wake_id=wake.wake_id, step_key="s", call_index=0, provider="anthropic",
        model=HOSTILE, window_hash="w", output_hash="o", stop_reason="end_turn",
        input_tokens=1, output_tokens=2, cache_creation_input_tokens=3,
        cache_read_input_tokens=4, cost_usd=0.5,
    )  # fmt: skip
    rows = [data.WakeRow(wake=wake, calls=[call], answer=HOSTILE)]
    html = pages.agent_page(HOSTILE, data.WakePage(rows, total=1, older=None))
    html += pages.wake_page(data.WakeView(wake=wake, steps=[], answer=HOSTILE))
    doc = parse(html)
    assert not doc.all("script") and not doc.all("img")
    assert HOSTILE in doc.one("pre", id="answer").text()
    assert "&lt;script&gt;" in html


def test_breakpoint_labels_that_would_overlap_take_rows_of_their_own() -> None:
    svg = parse(
        stacked_bar(
            [Part("stable", 1400), Part("recent", 100)],
            chart_id="b",
            title="t",
            marks=[Mark(1480, "stable"), Mark(1490, "history"), Mark(1500, "rolling")],
        )
    )
    ys = [float(t.attrs["y"]) for t in svg.all("text", class_="marklabel")]
    assert len(set(ys)) == 3, ys  # three labels within a few pixels: three rows
    assert parts(svg.one("svg")) == {"stable": 1400, "recent": 100}


def test_two_breakpoints_on_one_pixel_are_both_drawn() -> None:
    """Two marks at the same prefix length (or both clamped to the bar's end) land on one
    pixel: both are drawn, in the order given, each label in a row of its own."""
    svg = parse(
        stacked_bar(
            [Part("stable", 1400), Part("recent", 100)],
            chart_id="b",
            title="t",
            marks=[Mark(1500, "history"), Mark(1500, "rolling"), Mark(1400, "stable")],
        )
    )
    drawn = [(g.attrs["data-mark"], g.attrs["data-at"]) for g in svg.all("g", class_="mark")]
    assert drawn == [("stable", "1400"), ("history", "1500"), ("rolling", "1500")]
    ys = [float(t.attrs["y"]) for t in svg.all("text", class_="marklabel")]
    assert len(set(ys[1:])) == 2, ys


def test_every_cache_class_has_its_own_colour_on_the_timeline() -> None:
    from wakeful.compiler.cache_outcome import CacheClass
    from wakeful.ui.svg import CLASS_COLOURS

    assert {c.value for c in CacheClass} <= set(CLASS_COLOURS)
    assert len(set(CLASS_COLOURS.values())) == len(CLASS_COLOURS)  # none drawn like another
