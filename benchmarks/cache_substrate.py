"""An in-memory substrate that replays a generated session, for the cache benchmark.

It is a :class:`~wakeful.testing.MemoryStore` (the reads a compile's snapshot makes of a
:class:`~wakeful.substrate.store.TenantStore`, with its semantics, over Python lists), so
Wakeful's windows in the benchmark are built by the production snapshot code, without
Postgres, and its rows are stamped with the session's clock. Writes follow the
activities: ``start_wake`` appends the ask, ``record_output`` the reply, ``run_tools`` each
result, ``finish_wake`` a handoff note (built by the production ``build_handoff``), and
``consolidate`` registers the decisions stated so far and adds summaries that retire the
spans of raw events they stand for.

One thing the Postgres store has no write API for yet is done here directly and is part
of what the benchmark assumes: a failed tool call is marked ``resolved`` once a later call
fixes it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.cache_session import Turn, Wake
from wakeful.activities.wake import build_handoff
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.canonical import canonical_json
from wakeful.contracts import FinishWakeIn, WakeRef
from wakeful.substrate.records import (
    DecisionRecord,
    EventIn,
    HandoffRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.testing.memory import MemoryStore

__all__ = ["AGENT", "EPOCH", "MemorySubstrate", "at"]

AGENT = "oncall"
EPOCH = datetime(2025, 6, 2, 8, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """Session time (seconds since the start) as a UTC datetime."""
    return EPOCH + timedelta(seconds=seconds)


class MemorySubstrate(MemoryStore):
    """The agent's substrate in memory: :class:`~wakeful.testing.MemoryStore`'s reads and
    writes (``name`` is the tenant, as on ``TenantStore``), stamped with the session's
    clock, and the benchmark's writers."""

    def __init__(self) -> None:
        self.now = EPOCH  # the session time rows are stamped with (Postgres: its clock)
        super().__init__("bench", clock=lambda: self.now)
        self._slots: dict[str, int] = {}
        self._pending: list[tuple[str, str, int]] = []  # decisions stated, not registered yet
        self._session: str | None = None

    def slot(self, key: str) -> int:
        """An event id reserved under ``key`` (the same id for every caller): where each
        compiled strategy records the evidence its compile of one call brought, between
        what preceded the call and the reply. Event ids in Postgres have gaps too."""
        if key not in self._slots:
            self._last_event_id += 1
            self._slots[key] = self._last_event_id
        return self._slots[key]

    # --- writes (what the activities record) --------------------------------------------

    def _append(self, item: EventIn) -> StoredEvent:
        self.now = item.event_time
        # Content hashes as the store makes them, production's: retrieval drops a hit
        # whose text an earlier event had, as the worker's does.
        (stored,) = self.append_events(AGENT, [item])
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
        self.now = end
        self.write_handoff(
            HandoffRecord(
                agent=AGENT,
                session_id=ref.session_id,
                wake_id=ref.wake_id,
                step_key=f"{ref.wake_id}:handoff",
                body=body,
            )
        )

    def consolidate(self, summaries: list[tuple[int, int, str]], when: datetime) -> None:
        """Register the decisions stated so far, write level-1 summaries over event id
        spans and retire those raw events."""
        self._register(when)
        self.now = when
        for start, end, text in summaries:
            self.add_summary(
                SummaryRecord(
                    agent=AGENT,
                    step_key=f"consolidate:{start}-{end}",
                    level=1,
                    span_start=start,
                    span_end=end,
                    text=text,
                ),
                retire_span=True,
                at=when,
            )

    def _decide(self, ident: str, text: str, source: int, when: datetime) -> None:
        """A decision is stated. The worker registers decisions when it consolidates
        (``consolidation.rules``: promotion before a span is retired), which its schedule
        does between sessions: here, when the next session starts or history is
        consolidated, whichever comes first. Until then the turn that stated it holds it."""
        self._pending.append((ident, text, source))

    def _register(self, when: datetime) -> None:
        self.now = when
        for ident, text, source in self._pending:
            self.register_decision(
                DecisionRecord(decision_id=ident, agent=AGENT, text=text, source_event=source)
            )
        self._pending.clear()

    def _mark_resolved(self, call_id: str) -> None:
        # No store API marks a failure resolved yet: the benchmark sets the flag directly.
        rows = self._of(AGENT)
        rows.events = [
            e.model_copy(update={"resolved": True}) if e.tool_call_id == call_id else e
            for e in rows.events
        ]


def goal_of(wake: Wake) -> Goal:
    return Goal(kind=GoalKind.MESSAGE, text=wake.ask)
