"""Which history to rewrite now: turn spans, then session summaries, then period summaries.

Level 1 — **turn spans**. Per session, the eligible history is the longest prefix of its live
(unretired) events that is older than the horizon: not among the agent's newest
``keep_recent_events``, older than ``min_age``, and not part of a wake still running. The
prefix is cut into spans of at most ``span_max_events`` events / ``span_max_chars``
characters, never between a tool call and its result (a half pair would be lost to the
compile). A short tail waits for more history unless its session is closed.

Level 2 — **session summaries**. A closed session with two or more live summaries, or an open
one with ``rollup_fanout`` turn-span summaries, is rolled into one session summary (which
absorbs an earlier session summary of the same session).

Level 3 — **period summaries**. Summaries of *complete* sessions (closed, with no raw event
left) whose period (``policy.period``, counted from the Unix epoch) ended ``period_horizon``
ago are rolled up per period. ``closed`` passed to the level-3 plan is that set.

Span keys are derived from the ids alone, so two consolidations that pick the same span write
one summary (summaries are idempotent on that key).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from wakeful.compiler.blocks import content_hash
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.policy import ConsolidationPolicy

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Span(BaseModel):
    """A run of history to rewrite as one summary."""

    model_config = ConfigDict(frozen=True)

    level: int
    source: Literal["events", "summaries"]
    ids: tuple[int, ...]
    session_id: str | None = None

    @property
    def key(self) -> str:
        digest = content_hash(",".join(map(str, self.ids)))[:12]
        return f"L{self.level}:{self.source[0]}{self.ids[0]}-{self.ids[-1]}:{digest}"


class SessionBounds(BaseModel):
    model_config = ConfigDict(frozen=True)

    session_id: str | None
    first_id: int
    last_id: int
    last_at: datetime


class SummaryView(BaseModel):
    """A live summary as the planner sees it."""

    model_config = ConfigDict(frozen=True)

    id: int
    level: int
    span_start: int
    span_end: int
    session_id: str | None
    end_at: datetime


def closed_sessions(
    bounds: list[SessionBounds], running: frozenset[str], now: datetime, policy: ConsolidationPolicy
) -> frozenset[str]:
    """Sessions that will get no more events: a later one exists, or idle for long enough."""
    ordered = sorted(bounds, key=lambda b: b.last_id)
    out = set()
    for n, b in enumerate(ordered):
        if b.session_id is None or b.session_id in running:
            continue
        if n < len(ordered) - 1 or now - b.last_at >= policy.session_idle:
            out.add(b.session_id)
    return frozenset(out)


def _units(prefix: list[SpanItem]) -> list[list[SpanItem]]:
    """Group events so a tool call and its result(s) are never apart; drop an open tail."""
    units: list[list[SpanItem]] = []
    unit: list[SpanItem] = []
    pending: set[str] = set()
    for e in prefix:
        unit.append(e)
        if e.kind == "tool_call" and e.tool_call_id:
            pending.add(e.tool_call_id)
        elif e.kind == "tool_result" and e.tool_call_id:
            pending.discard(e.tool_call_id)
        if not pending:
            units.append(unit)
            unit = []
    return units


def select_spans(
    events: list[SpanItem],
    *,
    running_wakes: frozenset[str],
    closed: frozenset[str],
    now: datetime,
    policy: ConsolidationPolicy,
) -> list[Span]:
    """Level-1 spans over ``events`` (the agent's live events in id order)."""
    keep = policy.keep_recent_events
    recent = {e.id for e in events[len(events) - keep :]} if keep else set()
    cutoff = now - policy.min_age
    sessions: dict[str | None, list[SpanItem]] = {}
    for e in events:
        sessions.setdefault(e.session_id, []).append(e)
    spans: list[Span] = []
    for session, evs in sessions.items():
        prefix = []
        for e in evs:
            if (
                e.id in recent
                or e.at > cutoff
                or (e.wake_id is not None and e.wake_id in running_wakes)
            ):
                break
            prefix.append(e)
        chunk: list[SpanItem] = []
        chunks: list[list[SpanItem]] = []
        for unit in _units(prefix):
            size = len(chunk) + len(unit)
            chars = sum(len(e.text) for e in chunk) + sum(len(e.text) for e in unit)
            if chunk and (size > policy.span_max_events or chars > policy.span_max_chars):
                chunks.append(chunk)
                chunk = []
            chunk = chunk + unit
        if chunk and (len(chunk) >= policy.span_min_events or session in closed):
            chunks.append(chunk)
        spans += [
            Span(level=1, source="events", ids=tuple(e.id for e in c), session_id=session)
            for c in chunks
        ]
    # A bounded round keeps the workflow's history small; the next round takes the rest.
    return sorted(spans, key=lambda s: s.ids[0])[: policy.max_spans_per_round]


def _period(at: datetime, policy: ConsolidationPolicy) -> int:
    return int((at - EPOCH) / policy.period)


def plan_rollups(
    summaries: list[SummaryView],
    *,
    level: int,
    closed: frozenset[str],
    now: datetime,
    policy: ConsolidationPolicy,
) -> list[Span]:
    """Level-2 (``level=2``) or level-3 rollups over the live ``summaries``."""
    groups: dict[object, list[SummaryView]] = {}
    if level == 2:
        for s in summaries:
            if s.level <= 2 and s.session_id is not None:
                groups.setdefault(s.session_id, []).append(s)
        ready = {
            k: g
            for k, g in groups.items()
            if (k in closed and len(g) >= 2)
            or sum(1 for s in g if s.level == 1) >= policy.rollup_fanout
        }
    elif level == 3:
        per_session: dict[str, int] = {}
        for s in summaries:
            if s.session_id is not None:
                per_session[s.session_id] = per_session.get(s.session_id, 0) + 1
        for s in summaries:
            whole = s.level >= 2 or per_session.get(s.session_id or "", 0) == 1
            if s.session_id in closed and whole:
                groups.setdefault(_period(s.end_at, policy), []).append(s)
        ready = {
            k: g
            for k, g in groups.items()
            if len(g) >= 2 and EPOCH + (int(k) + 1) * policy.period <= now - policy.period_horizon  # type: ignore[call-overload]
        }
    else:
        raise ValueError(f"rollup level must be 2 or 3, not {level}")
    spans = []
    for key, group in ready.items():
        group = sorted(group, key=lambda s: s.span_start)
        session = str(key) if level == 2 else None
        spans.append(
            Span(
                level=level, source="summaries", ids=tuple(s.id for s in group), session_id=session
            )
        )
    return sorted(spans, key=lambda s: s.ids[0])
