"""The in-memory substrate answers the production snapshot code like the store would."""

from __future__ import annotations

from datetime import timedelta

from benchmarks.cache_session import generate_session
from benchmarks.cache_strategies import CallContext
from benchmarks.cache_substrate import AGENT, EPOCH, MemorySubstrate
from benchmarks.cache_timeline import Consolidation, timeline
from wakeful.activities.snapshot_input import build_snapshot
from wakeful.compiler import BlockKind


def _walk(turns: int) -> tuple[MemorySubstrate, list[CallContext | Consolidation]]:
    session = generate_session(turns, seed=11)
    sub = MemorySubstrate()
    return sub, list(timeline(session, sub))


def test_events_follow_the_activities_and_the_tail_bound_keeps_the_newest() -> None:
    sub, items = _walk(24)
    events = sub.events(AGENT)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    calls = [e for e in events if e.kind == "tool_call"]
    results = {e.tool_call_id for e in events if e.kind == "tool_result"}
    assert {c.tool_call_id for c in calls} == results
    assert sub.events(AGENT, limit=5, newest=True) == events[-5:]
    assert sub.events(AGENT, limit=5) == events[:5]
    assert sub.max_event_id(AGENT) == events[-1].id
    assert sum(isinstance(i, CallContext) for i in items) == 24


def test_a_fix_marks_the_failure_it_fixes_resolved() -> None:
    sub, _ = _walk(200)
    events = sub.events(AGENT)
    session = generate_session(200, seed=11)
    fixed = {u.fixes for t in session.turns for u in t.tools if u.fixes}
    for e in events:
        if e.tool_call_id in fixed:
            assert e.resolved, e
        elif e.is_error:
            assert not e.resolved, "a failure nobody fixed stays unresolved"


def test_consolidation_retires_a_span_behind_summaries_with_every_decision() -> None:
    sub, items = _walk(200)
    (done,) = [i for i in items if isinstance(i, Consolidation)]
    summaries = sub.summaries(AGENT)
    assert summaries
    retired = [e for e in sub.events(AGENT) if e.retired_at is not None]
    assert retired and all(s.span_start <= s.span_end for s in summaries)
    spans = [(s.span_start, s.span_end) for s in summaries]
    assert all(any(a <= e.id <= b for a, b in spans) for e in retired)
    for decision in sub.live_decisions(AGENT, EPOCH + timedelta(days=1)):
        if decision.source_event is not None and decision.source_event <= retired[-1].id:
            assert f"DECISION {decision.decision_id}: {decision.text}" in done.written


def test_the_production_snapshot_reads_it_session_by_session() -> None:
    session = generate_session(200, seed=11)
    sub = MemorySubstrate()
    contexts = [i for i in timeline(session, sub) if isinstance(i, CallContext)]
    # The last call is in the second session (after the 3 h gap).
    last = contexts[-1]
    spec = {
        "name": AGENT,
        "model": session.model,
        "provider": "anthropic",
        "instructions": session.instructions,
        "tools": [dict(t) for t in session.tools],
    }
    snap = build_snapshot(
        sub,  # type: ignore[arg-type]
        spec,
        session_id=last.ref.session_id,
        wake_id=last.ref.wake_id,
        max_event_id=sub.max_event_id(AGENT),
        as_of=last.now,
        recent_limit=200,
    )
    kinds = {b.kind for b in snap.blocks}
    assert {BlockKind.TOOL_SCHEMA, BlockKind.LOAD_BEARING, BlockKind.HANDOFF_NOTE} <= kinds
    assert BlockKind.SUMMARY in kinds
    (note,) = [b for b in snap.blocks if b.kind is BlockKind.HANDOFF_NOTE]
    assert note.session_id != last.ref.session_id, "the note that opened this session"
    events = [b for b in snap.blocks if b.id.startswith("ev:")]
    assert {b.session_id for b in events} == {last.ref.session_id}
    assert len([b for b in snap.blocks if b.kind is BlockKind.LOAD_BEARING]) == 5
