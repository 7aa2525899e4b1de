"""The baselines: three ways a hand-written agent loop builds each call's request.

Wakeful's own strategy is :class:`benchmarks.cache_wakeful.Wakeful`; all of them read
the same substrate events.

* :class:`FullHistory` — every event since the start, one breakpoint at the end;
* :class:`FullHistorySystem` — the same, plus a 1-hour breakpoint on the system prompt,
  so tools and instructions stay cached across idle gaps longer than 5 minutes;
* :class:`SlidingWindow` — the events of the last ``n`` model turns, one breakpoint;
* :class:`SummarizeThreshold` — full history until the request passes ``threshold``
  tokens, then the oldest whole wakes are summarised (a model call, charged) until the
  rest fits in ``keep`` of the threshold; the summary opens the transcript.

A strategy returns a :class:`Plan`: the request of the turn, and any maintenance calls to
make first (a compaction), each with the reply the model gives to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchmarks.cache_session import AgentSession, Doc, Turn, Wake
from benchmarks.cache_substrate import AGENT, MemorySubstrate
from benchmarks.cache_transcript import mark_last, render_events, summarize_events
from wakeful.contracts import WakeRef
from wakeful.providers.base import Usage
from wakeful.substrate.records import StoredEvent
from wakeful.testing.simulator.tokens import block_text, count_tokens

__all__ = [
    "CallContext",
    "FullHistory",
    "FullHistorySystem",
    "Maintenance",
    "Plan",
    "SlidingWindow",
    "Strategy",
    "SummarizeThreshold",
    "document_tokens",
    "request_body",
    "request_tokens",
]

MAX_TOKENS = 8192
SUMMARIZE_INSTRUCTION = (
    "Summarize the conversation so far for your own later use. Keep every DECISION line "
    "verbatim; keep one line per other step."
)


@dataclass(frozen=True)
class CallContext:
    """Everything a strategy may look at for one model call."""

    session: AgentSession
    substrate: MemorySubstrate
    wake: Wake
    ref: WakeRef
    turn: Turn
    now: datetime
    docs: dict[str, tuple[Doc, ...]]  # wake id -> that wake's retrieved documents


@dataclass(frozen=True)
class Maintenance:
    """A model call a strategy makes besides the turn (compaction, consolidation)."""

    kind: str
    request: dict[str, Any]
    reply: str


@dataclass(frozen=True)
class Plan:
    request: dict[str, Any]
    maintenance: tuple[Maintenance, ...] = ()


class Strategy:
    name: str = ""

    def plan(self, ctx: CallContext) -> Plan:
        raise NotImplementedError

    def observe(self, ctx: CallContext, usage: Usage) -> None:
        """What the provider reported for the turn's request (a worker sees it too)."""

    def details(self) -> dict[str, Any]:
        """The strategy's settings and what it did, for the report (none by default)."""
        return {}


def request_body(session: AgentSession, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A request of the session's model, system prompt and tools around ``messages``."""
    return {
        "model": session.model,
        "max_tokens": MAX_TOKENS,
        "system": [{"type": "text", "text": session.instructions}],
        "tools": [dict(t) for t in session.tools],
        "messages": messages,
    }


def document_tokens(request: dict[str, Any]) -> int:
    """Tokens of the retrieved documents a baseline's request carries (its evidence)."""
    return sum(
        count_tokens(block_text(b))
        for message in request["messages"]
        for b in message["content"]
        if b.get("type") == "text" and str(b.get("text", "")).startswith("<document id=")
    )


def request_tokens(request: dict[str, Any]) -> int:
    """Client-side estimate of a request's input tokens (the simulator's tokenizer)."""
    blocks: list[Any] = [*request.get("tools", []), *request.get("system", [])]
    for message in request["messages"]:
        blocks.extend(message["content"])
    return sum(count_tokens(block_text(b)) for b in blocks)


class FullHistory(Strategy):
    name = "full_history"

    def plan(self, ctx: CallContext) -> Plan:
        events = ctx.substrate.events(AGENT)
        return Plan(request_body(ctx.session, mark_last(render_events(events, ctx.docs))))


class FullHistorySystem(Strategy):
    """Full history with a second, hour-long breakpoint on the system prompt (a 1-hour
    breakpoint may precede 5-minute ones, never follow them)."""

    name = "full_history_system"

    def plan(self, ctx: CallContext) -> Plan:
        events = ctx.substrate.events(AGENT)
        body = request_body(ctx.session, mark_last(render_events(events, ctx.docs)))
        system = {"type": "text", "text": ctx.session.instructions}
        body["system"] = [{**system, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
        return Plan(body)


class SlidingWindow(Strategy):
    """The events from the ``n``-th most recent model turn on (the current ask included)."""

    name = "sliding_window"

    def __init__(self, n: int) -> None:
        self.n = n

    def plan(self, ctx: CallContext) -> Plan:
        events = ctx.substrate.events(AGENT)
        starts = [i for i, e in enumerate(events) if e.kind == "turn" and e.role == "assistant"]
        cut = starts[-self.n] if len(starts) >= self.n else 0
        return Plan(request_body(ctx.session, mark_last(render_events(events[cut:], ctx.docs))))


@dataclass
class SummarizeThreshold(Strategy):
    """Compact whole wakes into a summary when the request passes ``threshold`` tokens."""

    threshold: int
    keep: float = 0.5
    name: str = "summarize_threshold"
    summary: str = ""
    cut: int = 0  # events with id <= cut are in the summary
    compactions: int = field(default=0)

    def _messages(self, ctx: CallContext, events: list[StoredEvent]) -> list[dict[str, Any]]:
        lead = [{"type": "text", "text": f"<summary>\n{self.summary}\n</summary>"}]
        return render_events(events, ctx.docs, lead=lead if self.summary else ())

    def plan(self, ctx: CallContext) -> Plan:
        events = [e for e in ctx.substrate.events(AGENT) if e.id > self.cut]
        request = request_body(ctx.session, mark_last(self._messages(ctx, events)))
        if request_tokens(request) <= self.threshold:
            return Plan(request)
        # Keep the newest whole wakes (always the current one) within keep * threshold.
        asks = [i for i, e in enumerate(events) if e.kind == "turn" and e.role == "user"]
        start = asks[-1]
        for i in reversed(asks[:-1]):
            trial = request_body(ctx.session, mark_last(render_events(events[i:], ctx.docs)))
            if request_tokens(trial) > self.keep * self.threshold:
                break
            start = i
        if start == 0:
            return Plan(request)
        compaction = request_body(ctx.session, self._messages(ctx, events))
        compaction["messages"][-1]["content"].append(
            {"type": "text", "text": SUMMARIZE_INSTRUCTION}
        )
        compaction["messages"] = mark_last(compaction["messages"])
        added = summarize_events(events[:start])
        self.summary = f"{self.summary}\n{added}" if self.summary else added
        self.cut = events[start - 1].id
        self.compactions += 1
        kept = events[start:]
        request = request_body(ctx.session, mark_last(self._messages(ctx, kept)))
        return Plan(request, (Maintenance("compaction", compaction, self.summary),))
