"""The session's timeline: what happens in the substrate between the model calls.

:func:`timeline` replays a generated session into a :class:`MemorySubstrate` the way the
agent workflow drives the activities (``start_wake`` → per call: compile and call the
model, ``record_output``, ``run_tool`` → ``finish_wake``) and yields one
:class:`~benchmarks.cache_strategies.CallContext` per model call, at the moment of the
call, plus a :class:`Consolidation` when history is consolidated. The consumer (the
benchmark) builds and sends requests at each yield; the substrate moves on when it
resumes the iterator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from benchmarks.cache_session import AgentSession, Doc, Wake
from benchmarks.cache_strategies import CallContext
from benchmarks.cache_substrate import AGENT, MemorySubstrate, at, goal_of
from benchmarks.cache_transcript import summarize_events
from wakeful.activities.consolidate import item_of
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.contracts import WakeRef

__all__ = ["KEEP_RAW_WAKES", "WAKES_PER_SUMMARY", "Consolidation", "consolidate", "timeline"]

KEEP_RAW_WAKES = 2  # the newest wakes a consolidation leaves raw
WAKES_PER_SUMMARY = 6


@dataclass(frozen=True)
class Consolidation:
    """History was consolidated at ``at`` (seconds): the model read ``read``, wrote
    ``written`` (the summaries), and the raw span was retired. ``items`` are the span's
    events, as the summarise activity reads them."""

    at: float
    read: str
    written: str
    items: tuple[SpanItem, ...] = ()


def wake_ref(wake: Wake, session: int | None = None) -> WakeRef:
    """The wake's reference, in the session the shape gives it or in ``session``."""
    return WakeRef(
        tenant="bench",
        agent=AGENT,
        wake_id=f"{AGENT}:{wake.number}",
        session_id=f"{AGENT}:s{wake.session if session is None else session:04d}",
        workflow_id=f"wakeful-agent:bench:{AGENT}",
        number=wake.number,
    )


def consolidate(
    sub: MemorySubstrate, wakes: list[Wake], when: float, session_id: str | None = None
) -> Consolidation:
    """Summarise every raw event of the current session but its newest
    :data:`KEEP_RAW_WAKES` wakes and the wakes of the agent's newest ``keep_recent_events``
    events (as the worker's rounds leave them raw), :data:`WAKES_PER_SUMMARY` wakes per
    summary. ``session_id`` is the current session's (default: the shape's)."""
    session_id = session_id or wake_ref(wakes[-1]).session_id
    keep: set[str | None] = {wake_ref(w).wake_id for w in wakes[-KEEP_RAW_WAKES:]}
    live = sub.events(AGENT, include_retired=False)
    recent = ConsolidationPolicy().keep_recent_events
    keep |= {e.wake_id for e in live[len(live) - recent :]} if recent else set()
    span = [e for e in live if e.session_id == session_id and e.wake_id not in keep]
    if not span:
        return Consolidation(when, "", "")
    order = list(dict.fromkeys(e.wake_id for e in span))
    summaries = []
    for n in range(0, len(order), WAKES_PER_SUMMARY):
        group = set(order[n : n + WAKES_PER_SUMMARY])
        events = [e for e in span if e.wake_id in group]
        summaries.append((events[0].id, events[-1].id, summarize_events(events)))
    sub.consolidate(summaries, at(when))
    read = "\n\n".join(f"[{e.id}] {e.kind} {e.role or ''}: {e.text}" for e in span)
    written = "\n\n".join(text for _, _, text in summaries)
    return Consolidation(when, read, written, tuple(item_of(e) for e in span))


def timeline(
    session: AgentSession,
    sub: MemorySubstrate,
    history_full: Callable[[], bool] = lambda: False,
    session_of: Callable[[Wake], int] | None = None,
) -> Iterator[CallContext | Consolidation]:
    """One context per model call, in order; consolidation right after its wake: where the
    session says (the schedule), or when ``history_full`` says the wake's last window
    reached the policy's ``budget.consolidate_at`` (as the agent workflow does).
    ``session_of`` numbers each wake's session when it starts (as the agent workflow's
    pacing does); by default, the shape's sessions."""
    docs: dict[str, tuple[Doc, ...]] = {}
    for n, wake in enumerate(session.wakes):
        ref = wake_ref(wake, session_of(wake) if session_of is not None else None)
        docs[ref.wake_id] = wake.docs
        sub.start_wake(ref, wake)
        for turn in wake.turns:
            yield CallContext(session, sub, wake, ref, turn, at(turn.at), docs)
            sub.record_output(ref, turn)
            sub.run_tools(ref, turn)
        sub.finish_wake(ref, wake, goal_of(wake))
        if wake.consolidate_after or history_full():
            yield consolidate(sub, list(session.wakes[: n + 1]), wake.ended_at + 10, ref.session_id)
