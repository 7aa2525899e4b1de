"""Activities that open a wake, record the model's output, and close the wake with a handoff."""

from __future__ import annotations

import json

from temporalio import activity

from wakeful.activities.deps import ActivityDeps
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
from wakeful.substrate.records import EventIn, HandoffBody, HandoffRecord, WakeRecord
from wakeful.substrate.store import TenantStore


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
        ts = self._tenant(inp.wake)
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
            )
        )
        (ask,) = ts.append_events(
            inp.wake.agent,
            [
                EventIn(
                    step_key=step_key(inp.wake, "ask"),
                    kind="turn",
                    role="user",
                    # A webhook, schedule or child task is data from the world, not a
                    # person's words: stored framed as <wake kind="..."> so every window
                    # renders it as data (a message from a person passes through as is).
                    text=wake_text(inp.goal),
                    session_id=inp.wake.session_id,
                    wake_id=inp.wake.wake_id,
                    event_time=inp.started_at,
                    meta={"goal_kind": inp.goal.kind.value},
                )
            ],
        )
        return StartWakeOut(ask_event_id=ask.id)

    @activity.defn(name=RECORD_OUTPUT)
    def record_output(self, inp: RecordOutputIn) -> RecordOutputOut:
        ts = self._tenant(inp.wake)
        reply = ModelReply.model_validate_json(ts.get_blob(inp.output_hash))
        items: list[EventIn] = []
        common = {
            "session_id": inp.wake.session_id,
            "wake_id": inp.wake.wake_id,
            "event_time": inp.at,
        }
        if reply.text:
            items.append(
                EventIn(
                    step_key=step_key(inp.wake, inp.call_index, "text"),
                    kind="turn",
                    role="assistant",
                    text=reply.text,
                    **common,  # type: ignore[arg-type]
                )
            )
        for call in reply.tool_calls:
            items.append(
                EventIn(
                    step_key=step_key(inp.wake, inp.call_index, "call", call.id),
                    kind="tool_call",
                    role="assistant",
                    text=json.dumps(call.input, sort_keys=True),
                    tool_call_id=call.id,
                    tool_name=call.name,
                    tool_input=call.input,
                    **common,  # type: ignore[arg-type]
                )
            )
        stored = ts.append_events(inp.wake.agent, items)
        return RecordOutputOut(event_ids=tuple(e.id for e in stored))

    @activity.defn(name=FINISH_WAKE)
    def finish_wake(self, inp: FinishWakeIn) -> FinishWakeOut:
        ts = self._tenant(inp.wake)
        body = build_handoff(ts, inp)
        note = ts.write_handoff(
            HandoffRecord(
                agent=inp.wake.agent,
                session_id=inp.wake.session_id,
                wake_id=inp.wake.wake_id,
                step_key=step_key(inp.wake, "handoff"),
                body=body,
            )
        )
        ts.finish_wake(inp.wake.wake_id, inp.status, inp.at)
        assert note.id is not None
        return FinishWakeOut(handoff_id=note.id)


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
        + ([f"model call failed: {_clip(inp.error, 300)}"] if inp.error else []),
        next_actions=next_actions,
        evidence=[f"events:{e.id} ({e.tool_name})" for e in results],
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
