"""An in-memory substrate that replays a generated session, for the cache benchmark.

It implements exactly the reads :func:`wakeful.activities.compile.build_snapshot` (and so
:func:`wakeful.substrate.sources.load_blocks`) makes of a
:class:`~wakeful.substrate.store.TenantStore` — events, live decisions, the latest handoff
note, summaries, memories — over Python lists, so Wakeful's windows in the benchmark are
built by the production snapshot code, without Postgres. Writes follow the activities:
``start_wake`` appends the ask, ``record_output`` the reply, ``run_tool`` each result,
``finish_wake`` a handoff note (built by the production ``build_handoff``).

Two things the Postgres store has no write API for yet are done here directly and are
part of what the benchmark assumes: a failed tool call is marked ``resolved`` once a later
call fixes it, and consolidation retires a span of raw events behind a summary.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from benchmarks.cache_session import Turn, Wake
from wakeful.activities.wake import build_handoff
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.canonical import canonical_json
from wakeful.contracts import FinishWakeIn, WakeRef
from wakeful.substrate.records import (
    DecisionRecord,
    EventIn,
    HandoffRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.tail import tail_start

__all__ = ["AGENT", "EPOCH", "MemorySubstrate", "at", "recent_of"]

AGENT = "oncall"
EPOCH = datetime(2025, 6, 2, 8, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """Session time (seconds since the start) as a UTC datetime."""
    return EPOCH + timedelta(seconds=seconds)


class _Events(Protocol):
    def events(
        self,
        agent: str,
        *,
        max_id: int | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[StoredEvent]: ...


def recent_of(
    source: _Events,
    agent: str,
    *,
    max_id: int,
    limit: int,
    session_id: str | None = None,
    page: int = 1,
) -> list[StoredEvent]:
    """``TenantStore.recent_events`` over a list-backed ``events``: the newest ``limit``
    events (of ``session_id``, paged back from its newest by ``page``)."""
    if session_id is None or page == 1:
        tail = source.events(agent, max_id=max_id, limit=limit, newest=True)
        return [e for e in tail if session_id is None or e.session_id == session_id]
    mine = [e for e in source.events(agent, max_id=max_id) if e.session_id == session_id]
    return mine[tail_start(len(mine), limit, page) :]


class MemorySubstrate:
    """The agent's substrate as lists; ``name`` is the tenant, as on ``TenantStore``."""

    name = "bench"

    def __init__(self) -> None:
        self._events: list[StoredEvent] = []
        self._decisions: list[DecisionRecord] = []
        self._handoffs: list[HandoffRecord] = []
        self._summaries: list[SummaryRecord] = []
        self._memories: list[MemoryRecord] = []
        self._by_call: dict[str, int] = {}  # tool_call_id -> index of its result event
        self._last_id = 0
        self._slots: dict[str, int] = {}
        self._pending: list[tuple[str, str, int]] = []  # decisions stated, not registered yet
        self._session: str | None = None

    # --- reads (TenantStore's signatures) -----------------------------------------------

    def events(
        self,
        agent: str,
        *,
        wake_id: str | None = None,
        max_id: int | None = None,
        include_retired: bool = True,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[StoredEvent]:
        out = [
            e
            for e in self._events
            if (wake_id is None or e.wake_id == wake_id)
            and (max_id is None or e.id <= max_id)
            and (include_retired or e.retired_at is None)
        ]
        if limit is not None:
            out = out[-limit:] if newest else out[:limit]
        return out

    def recent_events(
        self,
        agent: str,
        *,
        max_id: int,
        limit: int,
        session_id: str | None = None,
        page: int = 1,
    ) -> list[StoredEvent]:
        return recent_of(self, agent, max_id=max_id, limit=limit, session_id=session_id, page=page)

    @contextlib.contextmanager
    def unit(self) -> Iterator[MemorySubstrate]:
        """Reads of a list are consistent already; kept for TenantStore's shape (its
        ``within`` and ``standalone`` too: every call reads the same lists)."""
        yield self

    def within(self, unit: MemorySubstrate) -> MemorySubstrate:
        return self

    def standalone(self) -> MemorySubstrate:
        return self

    def max_event_id(self, agent: str) -> int:
        return self._events[-1].id if self._events else 0

    def slot(self, key: str) -> int:
        """An event id reserved under ``key`` (the same id for every caller): where each
        compiled strategy records the evidence its compile of one call brought, between
        what preceded the call and the reply. Event ids in Postgres have gaps too."""
        if key not in self._slots:
            self._last_id += 1
            self._slots[key] = self._last_id
        return self._slots[key]

    def events_with_positions(
        self, agent: str, *, after_id: int, upto_id: int, limit: int
    ) -> list[tuple[StoredEvent, int]]:
        """What the event index reads (``EventIndex.catch_up``)."""
        position: dict[str | None, int] = {}
        out: list[tuple[StoredEvent, int]] = []
        for e in self._events:
            n = position.get(e.session_id, 0)
            position[e.session_id] = n + 1
            if after_id < e.id <= upto_id and len(out) < limit:
                out.append((e, n if e.session_id is not None else 0))
        return out

    # ``revision`` is accepted and ignored: this substrate lives for one bench run, with no
    # consolidation racing a compile, so it is always read as it stands.
    def live_decisions(
        self, agent: str, at: datetime, *, revision: int | None = None
    ) -> list[DecisionRecord]:
        live = [
            d
            for d in self._decisions
            if d.superseded_by is None
            and (d.expires_at is None or d.expires_at > at)
            and (d.created_at is None or d.created_at <= at)
        ]
        return sorted(live, key=lambda d: d.decision_id)

    def latest_handoff(
        self,
        agent: str,
        *,
        before: datetime | None = None,
        max_id: int | None = None,
        other_than_session: str | None = None,
        revision: int | None = None,
    ) -> HandoffRecord | None:
        found = [
            h
            for h in self._handoffs
            if (other_than_session is None or h.session_id != other_than_session)
            and (before is None or (h.created_at is not None and h.created_at <= before))
            and (max_id is None or (h.id or 0) <= max_id)
        ]
        return found[-1] if found else None

    def summaries(
        self, agent: str, *, max_id: int | None = None, revision: int | None = None
    ) -> list[SummaryRecord]:
        live = [
            s
            for s in self._summaries
            if s.superseded_by is None and (max_id is None or s.span_end <= max_id)
        ]
        return sorted(live, key=lambda s: s.span_start)

    def memories(
        self, agent: str, *, at: datetime | None = None, revision: int | None = None
    ) -> list[MemoryRecord]:
        return [
            m
            for m in self._memories
            if (at is None or m.captured_at <= at)
            and (m.invalidated_at is None or (at is not None and m.invalidated_at > at))
        ]

    # --- writes (what the activities record) --------------------------------------------

    def _append(self, item: EventIn) -> StoredEvent:
        self._last_id += 1
        n = self._last_id
        stored = StoredEvent(
            **item.model_dump(), id=n, content_hash=f"ev{n}", ingest_time=item.event_time
        )
        self._events.append(stored)
        return stored

    def start_wake(self, ref: WakeRef, wake: Wake) -> None:
        """The ask event (and a decision the user states in it). A new session first
        registers the decisions stated in the sessions before it (see ``_decide``)."""
        if self._session is not None and ref.session_id != self._session:
            self._register(at(wake.at))
        self._session = ref.session_id
        ask = self._append(
            EventIn(
                step_key=f"{ref.wake_id}:ask",
                kind="turn",
                role="user",
                text=wake.ask,
                session_id=ref.session_id,
                wake_id=ref.wake_id,
                event_time=at(wake.at),
            )
        )
        if wake.decision is not None:
            self._decide(wake.decision.id, wake.decision.text, ask.id, at(wake.at))

    def record_output(self, ref: WakeRef, turn: Turn) -> None:
        """The reply's text and tool calls, as ``record_output`` stores them."""
        when = at(turn.at + turn.latency)
        common: dict[str, Any] = {
            "session_id": ref.session_id,
            "wake_id": ref.wake_id,
            "event_time": when,
            "role": "assistant",
            "meta": {"reply": str(turn.index)},  # one reply, sent back as one message
        }
        text = self._append(
            EventIn(
                step_key=f"{ref.wake_id}:{turn.index}:text", kind="turn", text=turn.text, **common
            )
        )
        if turn.decision is not None:
            self._decide(turn.decision.id, turn.decision.text, text.id, when)
        for use in turn.tools:
            self._append(
                EventIn(
                    step_key=f"{ref.wake_id}:{turn.index}:call:{use.id}",
                    kind="tool_call",
                    text=canonical_json(use.input),
                    tool_call_id=use.id,
                    tool_name=use.name,
                    tool_input=use.input,
                    **common,
                )
            )

    def run_tools(self, ref: WakeRef, turn: Turn) -> None:
        """Each tool's result; a successful fix marks the failure it fixes resolved."""
        for use in turn.tools:
            when = at(turn.at + turn.latency + use.seconds)
            self._by_call[use.id] = len(self._events)
            self._append(
                EventIn(
                    step_key=f"{ref.wake_id}:{turn.index}:result:{use.id}",
                    kind="tool_result",
                    role="user",
                    text=use.output,
                    session_id=ref.session_id,
                    wake_id=ref.wake_id,
                    tool_call_id=use.id,
                    tool_name=use.name,
                    is_error=use.is_error,
                    event_time=when,
                )
            )
            if use.fixes is not None:
                self._mark_resolved(use.fixes)

    def finish_wake(self, ref: WakeRef, wake: Wake, goal: Goal) -> None:
        """The production handoff note, from what this wake recorded."""
        end = at(wake.ended_at)
        body = build_handoff(
            self,  # type: ignore[arg-type]
            FinishWakeIn(
                wake=ref,
                goal=goal,
                status="done",
                at=end,
                model_calls=len(wake.turns),
                tool_calls=sum(len(t.tools) for t in wake.turns),
            ),
        )
        self._handoffs.append(
            HandoffRecord(
                id=len(self._handoffs) + 1,
                agent=AGENT,
                session_id=ref.session_id,
                wake_id=ref.wake_id,
                step_key=f"{ref.wake_id}:handoff",
                body=body,
                created_at=end,
            )
        )

    def consolidate(self, summaries: list[tuple[int, int, str]], when: datetime) -> None:
        """Register the decisions stated so far, write level-1 summaries over event id
        spans and retire those raw events."""
        self._register(when)
        for start, end, text in summaries:
            self._summaries.append(
                SummaryRecord(
                    id=len(self._summaries) + 1,
                    agent=AGENT,
                    step_key=f"consolidate:{start}-{end}",
                    level=1,
                    span_start=start,
                    span_end=end,
                    text=text,
                    created_at=when,
                )
            )
            for n, e in enumerate(self._events):
                if start <= e.id <= end and e.retired_at is None:
                    self._events[n] = e.model_copy(update={"retired_at": when})

    def _decide(self, ident: str, text: str, source: int, when: datetime) -> None:
        """A decision is stated. The worker registers decisions when it consolidates
        (``consolidation.rules``: promotion before a span is retired), which its schedule
        does between sessions: here, when the next session starts or history is
        consolidated, whichever comes first. Until then the turn that stated it holds it."""
        self._pending.append((ident, text, source))

    def _register(self, when: datetime) -> None:
        for ident, text, source in self._pending:
            self._decisions.append(
                DecisionRecord(
                    decision_id=ident, agent=AGENT, text=text, source_event=source, created_at=when
                )
            )
        self._pending.clear()

    def _mark_resolved(self, call_id: str) -> None:
        for n, e in enumerate(self._events):
            if e.tool_call_id == call_id:
                self._events[n] = e.model_copy(update={"resolved": True})


def goal_of(wake: Wake) -> Goal:
    return Goal(kind=GoalKind.MESSAGE, text=wake.ask)
