"""Activities that open a wake, record the model's output, and close the wake with a handoff.

Opening and closing are also functions (:func:`open_wake`, :func:`close_wake`,
:func:`record_reply`) so the steps that always follow them can do them too: a wake's first
compile opens it, and the model call whose reply calls no tools records and closes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import activity

from wakeful.activities.deps import ActivityDeps
from wakeful.compiler.blocks import Goal
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.framing import wake_text
from wakeful.contracts import (
    FINISH_WAKE,
    RECORD_OUTPUT,
    START_WAKE,
    FinishWakeIn,
    FinishWakeOut,
    RecordOutputIn,
    RecordOutputOut,
    StartWakeIn,
    StartWakeOut,
    WakeRef,
)
from wakeful.providers.base import ModelReply
from wakeful.substrate.records import (
    EventIn,
    HandoffBody,
    HandoffRecord,
    StoredEvent,
    WakeRecord,
)
from wakeful.substrate.store import TenantStore
from wakeful.telemetry import Telemetry


def step_key(wake: WakeRef, *parts: object) -> str:
    """Idempotency key of one write: the wake plus its step within the wake."""
    return ":".join([wake.workflow_id, wake.wake_id, *map(str, parts)])


class WakeActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    def _tenant(self, wake: WakeRef) -> TenantStore:
        return self.deps.store.tenant(wake.tenant)

    @activity.defn(name=START_WAKE)
    def start_wake(self, inp: StartWakeIn) -> StartWakeOut:
        return StartWakeOut(ask_event_id=open_wake(self._tenant(inp.wake), inp))

    @activity.defn(name=RECORD_OUTPUT)
    def record_output(self, inp: RecordOutputIn) -> RecordOutputOut:
        """The reply's turns, for workflows that still record them in a step of their own
        (``call_model`` records them itself when asked to: one step fewer per model call)."""
        ts = self._tenant(inp.wake)
        reply = ModelReply.model_validate_json(ts.get_blob(inp.output_hash))
        stored = record_reply(ts, inp.wake, inp.call_index, reply, inp.at)
        return RecordOutputOut(event_ids=tuple(e.id for e in stored))

    @activity.defn(name=FINISH_WAKE)
    def finish_wake(self, inp: FinishWakeIn) -> FinishWakeOut:
        ts = self._tenant(inp.wake)
        return FinishWakeOut(handoff_id=close_wake(ts, inp, self.deps.telemetry))


def open_wake(ts: TenantStore, inp: StartWakeIn) -> int:
    """Record the wake and its ask (idempotent on the wake id and step key); the ask's id."""
    ts.start_wake(
        WakeRecord(
            wake_id=inp.wake.wake_id,
            agent=inp.wake.agent,
            session_id=inp.wake.session_id,
            workflow_id=inp.wake.workflow_id,
            number=inp.wake.number,
            goal=inp.goal.model_dump(mode="json"),
            idempotency_key=inp.idempotency_key,
            started_at=inp.started_at,
            user_id=inp.wake.user,
        )
    )
    ask = ask_event(
        inp.goal,
        step=step_key(inp.wake, "ask"),
        session_id=inp.wake.session_id,
        wake_id=inp.wake.wake_id,
        at=inp.started_at,
        user_id=inp.wake.user,
    )
    (stored,) = ts.append_events(inp.wake.agent, [ask])
    return stored.id


def ask_event(
    goal: Goal,
    *,
    step: str,
    session_id: str | None,
    wake_id: str,
    at: datetime,
    user_id: str | None = None,
) -> EventIn:
    """The event a wake's goal is stored as: the user turn its windows end with."""
    return EventIn(
        step_key=step,
        kind="turn",
        role="user",
        # A webhook, schedule or child task is data from the world, not a person's words:
        # stored framed as <wake kind="..."> so every window renders it as data (a message
        # from a person passes through as is).
        text=wake_text(goal),
        session_id=session_id,
        wake_id=wake_id,
        event_time=at,
        meta={"goal_kind": goal.kind.value},
        user_id=user_id,
    )


def close_wake(ts: TenantStore, inp: FinishWakeIn, telemetry: Telemetry | None = None) -> int:
    """Write the wake's handoff note (once: keyed by its step) and its status; the note's id.

    With ``telemetry``, also write the wake's root span (``wake_trace``): the spans its
    activities recorded are its children.
    """
    note = ts.write_handoff(
        HandoffRecord(
            agent=inp.wake.agent,
            session_id=inp.wake.session_id,
            wake_id=inp.wake.wake_id,
            step_key=step_key(inp.wake, "handoff"),
            body=build_handoff(ts, inp),
            user_id=inp.wake.user,
        )
    )
    # Its replies are stored: the agent's earlier previews go (this one stays for a
    # reader), with the status written (one statement).
    ts.finish_wake_keeping_its_stream(inp.wake.agent, inp.wake.wake_id, inp.status, inp.at)
    assert note.id is not None
    if telemetry is not None and telemetry.enabled:
        trace_wake(ts, inp, telemetry)
    return note.id


def trace_wake(ts: TenantStore, inp: FinishWakeIn, telemetry: Telemetry) -> None:
    """The wake's root span, from its ask (stored at the wake's start) to ``inp.at``."""
    first = ts.events(inp.wake.agent, wake_id=inp.wake.wake_id, limit=1)
    telemetry.record_wake(
        tenant=inp.wake.tenant,
        agent=inp.wake.agent,
        wake_id=inp.wake.wake_id,
        started_at=first[0].event_time if first else inp.at,
        ended_at=inp.at,
        status=inp.status,
        error=inp.error,
        conversation_id=inp.wake.session_id,
        attributes={
            "wakeful.session_id": inp.wake.session_id,
            "wakeful.wake.number": inp.wake.number,
            "wakeful.wake.model_calls": inp.model_calls,
            "wakeful.wake.tool_calls": inp.tool_calls,
        },
    )


def record_reply(
    ts: TenantStore, wake: WakeRef, call_index: int, reply: ModelReply, at: datetime
) -> list[StoredEvent]:
    """Append a model reply to the transcript, one event per block in the provider's order:
    each text block a turn, each tool call a ``tool_call`` event whose text is its arguments
    as the provider spelled them. Every event carries ``meta["reply"]`` (the call index), so
    the compiler sends the reply back as the one assistant message it was, block for block.

    Idempotent on the reply's step keys, so a retried step finds its first write.
    """
    common: dict[str, Any] = {
        "session_id": wake.session_id,
        "wake_id": wake.wake_id,
        "event_time": at,
        "meta": {"reply": str(call_index)},
        "user_id": wake.user,
    }
    items: list[EventIn] = []
    texts = 0
    for block in reply.content():
        call = block.call
        if block.type == "text" and block.text:
            # The first text block keeps the key a reply's only text event always had.
            parts: tuple[object, ...] = ("text",) if texts == 0 else ("text", texts)
            texts += 1
            items.append(
                EventIn(
                    step_key=step_key(wake, call_index, *parts),
                    kind="turn",
                    role="assistant",
                    text=block.text,
                    **common,
                )
            )
        elif block.type == "tool_use" and call is not None:
            items.append(
                EventIn(
                    step_key=step_key(wake, call_index, "call", call.id),
                    kind="tool_call",
                    role="assistant",
                    text=call.arguments or canonical_json(call.input),
                    tool_call_id=call.id,
                    tool_name=call.name,
                    tool_input=call.input,
                    **common,
                )
            )
    return ts.append_events(wake.agent, items)


def build_handoff(ts: TenantStore, inp: FinishWakeIn) -> HandoffBody:
    """A handoff note from what the wake recorded: deterministic, no model call needed."""
    events = ts.events(inp.wake.agent, wake_id=inp.wake.wake_id)
    said = [e.text for e in events if e.kind == "turn" and e.role == "assistant"]
    last = said[-1] if said else "(the model produced no text in this wake)"
    errors = [e for e in events if e.kind == "tool_result" and e.is_error]
    results = [e for e in events if e.kind == "tool_result"]
    next_actions = [
        line.strip()[len("next:") :].strip()
        for text in said
        for line in text.splitlines()
        if line.strip().lower().startswith("next:")
    ]
    return HandoffBody(
        goal=inp.goal.text,
        current_state=(
            f"Wake {inp.wake.number} ended {inp.status} after {inp.model_calls} model call(s)"
            f" and {inp.tool_calls} tool call(s). Last reply: {_clip(last, 800)}"
        ),
        decisions=[d.decision_id for d in ts.live_decisions(inp.wake.agent, inp.at)],
        blockers=[f"{e.tool_name}: {_clip(e.text, 200)}" for e in errors]
        + ([f"{_failed(inp.status)}: {_clip(inp.error, 300)}"] if inp.error else []),
        next_actions=next_actions,
        evidence=[f"events:{e.id} ({e.tool_name})" for e in results],
    )


def _failed(status: str) -> str:
    """What a wake's error is about: a failed model call, or the status it ended with."""
    return "model call failed" if status == "model_error" else f"ended {status}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
