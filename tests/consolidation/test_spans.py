"""Span selection honours the horizon, running wakes, sessions and tool pairs; rollups
follow the hierarchy."""

from __future__ import annotations

from datetime import timedelta

from tests.consolidation.helpers import T0, tool_pair, turn
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.spans import (
    SessionBounds,
    Span,
    SummaryView,
    closed_sessions,
    plan_rollups,
    select_spans,
)

POLICY = ConsolidationPolicy(
    keep_recent_events=4, min_age=timedelta(hours=1), span_max_events=5, span_min_events=3
)
NOW = T0 + timedelta(days=1)


def history(n: int, session: str = "s1", start: int = 1, wake: str | None = None) -> list[SpanItem]:
    return [turn(i, f"turn {i}", session_id=session, wake_id=wake) for i in range(start, start + n)]


def ids(spans: list[Span]) -> list[tuple[int, ...]]:
    return [s.ids for s in spans]


def test_recent_young_and_running_history_stays_raw() -> None:
    events = history(12)
    spans = select_spans(
        events, running_wakes=frozenset(), closed=frozenset(), now=NOW, policy=POLICY
    )
    # 12 events, the newest 4 kept: 8 eligible -> 5 + 3.
    assert ids(spans) == [(1, 2, 3, 4, 5), (6, 7, 8)]
    young = select_spans(
        events,
        running_wakes=frozenset(),
        closed=frozenset(),
        now=T0 + timedelta(minutes=30),
        policy=POLICY,
    )
    assert young == []
    running = [*history(6), *history(6, start=7, wake="w-live")]
    spans = select_spans(
        running, running_wakes=frozenset({"w-live"}), closed=frozenset(), now=NOW, policy=POLICY
    )
    assert ids(spans) == [(1, 2, 3, 4, 5)]  # event 6 alone waits: its session is open


def test_a_short_tail_is_summarised_once_its_session_closed() -> None:
    events = history(7)
    open_ = select_spans(
        events,
        running_wakes=frozenset(),
        closed=frozenset(),
        now=NOW,
        policy=POLICY.model_copy(update={"keep_recent_events": 0}),
    )
    closed = select_spans(
        events,
        running_wakes=frozenset(),
        closed=frozenset({"s1"}),
        now=NOW,
        policy=POLICY.model_copy(update={"keep_recent_events": 0}),
    )
    assert ids(open_) == [(1, 2, 3, 4, 5)]
    assert ids(closed) == [(1, 2, 3, 4, 5), (6, 7)]


def test_spans_never_split_a_tool_call_from_its_result() -> None:
    events = [
        turn(1, "a"),
        turn(2, "b"),
        turn(3, "c"),
        turn(4, "d"),
        *tool_pair(5, "c1", "out"),
        turn(7, "e"),
        turn(8, "f"),
    ]
    events = [e.model_copy(update={"session_id": "s1"}) for e in events]
    policy = POLICY.model_copy(update={"keep_recent_events": 0})
    spans = select_spans(
        events, running_wakes=frozenset(), closed=frozenset({"s1"}), now=NOW, policy=policy
    )
    assert ids(spans) == [(1, 2, 3, 4), (5, 6, 7, 8)]
    # A call whose result is still too young stops the span before the call.
    late = [*events[:5], events[5].model_copy(update={"at": NOW})]
    spans = select_spans(
        late, running_wakes=frozenset(), closed=frozenset({"s1"}), now=NOW, policy=policy
    )
    assert ids(spans) == [(1, 2, 3, 4)]


def test_sessions_are_spanned_separately() -> None:
    events = [*history(4, "s1"), *history(4, "s2", start=5)]
    policy = POLICY.model_copy(update={"keep_recent_events": 0})
    spans = select_spans(
        events, running_wakes=frozenset(), closed=frozenset({"s1", "s2"}), now=NOW, policy=policy
    )
    assert [(s.session_id, s.ids) for s in spans] == [("s1", (1, 2, 3, 4)), ("s2", (5, 6, 7, 8))]
    assert (
        spans[0].key != spans[1].key
        and spans[0].key == Span(level=1, source="events", ids=(1, 2, 3, 4)).key
    )


def test_closed_sessions() -> None:
    bounds = [
        SessionBounds(session_id="s1", first_id=1, last_id=10, last_at=T0),
        SessionBounds(session_id="s2", first_id=11, last_id=20, last_at=NOW - timedelta(hours=1)),
    ]
    assert closed_sessions(bounds, frozenset(), NOW, POLICY) == {"s1"}
    assert closed_sessions(bounds, frozenset(), NOW + timedelta(hours=6), POLICY) == {"s1", "s2"}
    assert closed_sessions(bounds, frozenset({"s1"}), NOW, POLICY) == set()


def view(i: int, level: int, session: str, days: float = 0) -> SummaryView:
    return SummaryView(
        id=i,
        level=level,
        span_start=i * 10,
        span_end=i * 10 + 9,
        session_id=session,
        end_at=T0 + timedelta(days=days),
    )


def test_session_rollups() -> None:
    summaries = [
        view(1, 1, "s1"),
        view(2, 1, "s1"),
        view(3, 1, "s2"),
        *[view(i, 1, "s3") for i in range(4, 8)],
    ]
    spans = plan_rollups(summaries, level=2, closed=frozenset({"s1"}), now=NOW, policy=POLICY)
    # s1 closed with two summaries; s2 has one; s3 is open but reached the fan-out of 4.
    assert [(s.session_id, s.ids, s.level) for s in spans] == [
        ("s1", (1, 2), 2),
        ("s3", (4, 5, 6, 7), 2),
    ]
    assert all(s.source == "summaries" for s in spans)


def test_period_rollups_wait_for_the_period_to_age() -> None:
    policy = POLICY.model_copy(
        update={"period": timedelta(days=7), "period_horizon": timedelta(days=7)}
    )
    summaries = [
        view(1, 2, "s1", days=0),
        view(2, 1, "s2", days=1),
        view(3, 2, "s3", days=2),
        view(4, 1, "s4", days=2),
        view(5, 1, "s4", days=2),
    ]
    closed = frozenset({"s1", "s2", "s3", "s4"})
    assert plan_rollups(summaries, level=3, closed=closed, now=NOW, policy=policy) == []
    later = plan_rollups(
        summaries, level=3, closed=closed, now=T0 + timedelta(days=30), policy=policy
    )
    # All five end in one epoch-aligned week; s4 has two turn-span summaries, not a session
    # summary yet, so it waits for level 2.
    assert [(s.level, s.ids) for s in later] == [(3, (1, 2, 3))]


def test_a_backlog_is_worked_off_oldest_first_over_several_rounds() -> None:
    events = history(40)
    policy = POLICY.model_copy(update={"max_spans_per_round": 3})
    spans = select_spans(
        events, running_wakes=frozenset(), closed=frozenset(), now=NOW, policy=policy
    )
    assert ids(spans) == [tuple(range(1, 6)), tuple(range(6, 11)), tuple(range(11, 16))]
