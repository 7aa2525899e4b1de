"""Activities around wakes: resume counters, end a session, keep a cache warm, deliver a
trigger, and record tool results the workflow decided (failed, cancelled or refused calls).

Each is idempotent like the rest: writes are keyed by ``(workflow id, wake, step)``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError

from wakeful.activities import handoff_note as hn
from wakeful.activities.consolidate import item_of
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.promotion import promote_session
from wakeful.activities.wake import step_key
from wakeful.consolidation.items import SpanItem
from wakeful.contracts import (
    DELIVER_TRIGGER,
    END_SESSION,
    FIND_WAKE,
    KEEP_WARM,
    RECORD_TOOL_RESULTS,
    RESUME_AGENT,
    DeliverTriggerIn,
    DeliverTriggerOut,
    EndSessionIn,
    EndSessionOut,
    FindWakeIn,
    FindWakeOut,
    KeepWarmIn,
    KeepWarmOut,
    RecordToolResultsIn,
    RecordToolResultsOut,
    ResumeAgentIn,
    ResumeAgentOut,
    WakeResult,
)
from wakeful.errors import ProviderError, UnknownAgentError
from wakeful.providers.base import ModelReply
from wakeful.providers.pricing import cost_usd
from wakeful.substrate.records import (
    ConsolidationLogRecord,
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
    WakeRecord,
)
from wakeful.substrate.store import TenantStore
from wakeful.users import visible_to
from wakeful.workflows.state import AgentInput, workflow_id

__all__ = ["SessionActivities", "session_note"]

# The output cap of a keep-warm call, by request shape (OpenAI's Responses API needs >= 16).
_MAX_OUTPUT_KEYS = {"max_tokens": 1, "max_completion_tokens": 1, "max_output_tokens": 16}
# The session-end note call: its output cap, and how long it may take before the template
# note is written instead (under the activity's timeout, so a slow provider is not retried).
NOTE_MAX_TOKENS = 1024
NOTE_TIMEOUT_S = 45.0
# How many of the agent's newest events are read to find the ending session's turns.
_NOTE_EVENTS = 1000


class SessionActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    @activity.defn(name=RESUME_AGENT)
    def resume_agent(self, inp: ResumeAgentIn) -> ResumeAgentOut:
        ts = self.deps.store.tenant(inp.tenant)
        wakes = ts.wakes(inp.agent)
        tagged = self.deps.search_attributes
        if not wakes:
            return ResumeAgentOut(
                wakes=0,
                session_number=0,
                session_id="",
                last_wake_at=None,
                search_attributes=tagged,
            )
        last = wakes[-1]
        session_id = last.session_id.rsplit(":", 1)[-1]
        number = int(session_id[1:]) if session_id[1:].isdigit() else len(wakes)
        return ResumeAgentOut(
            wakes=max(w.number for w in wakes),
            session_number=number,
            session_id=session_id,
            last_wake_at=last.finished_at or last.started_at,
            recent=tuple(_result(ts, w) for w in wakes[-inp.recent :] if w.idempotency_key),
        )

    @activity.defn(name=FIND_WAKE)
    def find_wake(self, inp: FindWakeIn) -> FindWakeOut:
        ts = self.deps.store.tenant(inp.tenant)
        w = ts.wake_by_key(inp.agent, inp.idempotency_key)
        return FindWakeOut(result=None if w is None else _result(ts, w))

    @activity.defn(name=END_SESSION)
    async def end_session(self, inp: EndSessionIn) -> EndSessionOut:
        """Write the session's closing note: the model's when it passes the checks of
        :mod:`wakeful.activities.handoff_note`, else the template's. (Substrate calls run in
        a thread: this activity runs on the worker's event loop.)"""
        ts = self.deps.store.tenant(inp.wake.tenant)
        key = step_key(inp.wake, "session-end")
        # The session's stated constraints become load-bearing before the note that the
        # next session starts from is written (idempotent: a retry promotes nothing twice).
        promoted, _ = await asyncio.to_thread(
            promote_session, ts, inp.wake.agent, inp.wake.session_id
        )
        # A retry finds the choice its first attempt logged: one model call, one note.
        logged = await asyncio.to_thread(ts.logged, f"{key}:note")
        if logged is not None:
            body = HandoffBody.model_validate(logged.detail["body"])
            source, reason = logged.status, str(logged.detail.get("reason", ""))
            cost = float(logged.detail.get("cost_usd", 0.0))
        else:
            template = await asyncio.to_thread(session_note, ts, inp, promoted)
            body, source, reason, detail = await self._model_note(ts, inp, template, promoted)
            cost = float(detail.get("cost_usd", 0.0))
            # ``reasons``, as consolidation's entries have them (its log lists them).
            detail |= {"reason": reason, "reasons": [reason], "body": body.model_dump()}
            await asyncio.to_thread(
                ts.log_consolidation,
                ConsolidationLogRecord(
                    agent=inp.wake.agent,
                    step_key=f"{key}:note",
                    round_id=key,
                    action="handoff_note",
                    status=source,
                    subject=inp.wake.session_id,
                    detail=detail,
                ),
            )
        note = await asyncio.to_thread(
            ts.write_handoff,
            HandoffRecord(
                agent=inp.wake.agent,
                session_id=inp.wake.session_id,
                wake_id=inp.wake.wake_id,
                step_key=key,
                body=body,
                user_id=inp.wake.user,
            ),
        )
        assert note.id is not None
        return EndSessionOut(handoff_id=note.id, note=source, note_reason=reason, cost_usd=cost)

    async def _model_note(
        self, ts: TenantStore, inp: EndSessionIn, template: HandoffBody, promoted: Sequence[str]
    ) -> tuple[HandoffBody, str, str, dict[str, Any]]:
        """``(note, "model" | "template", why, detail)``: the model's note if it passes."""
        wake = inp.wake
        try:
            agent = self.deps.agents.get(wake.tenant, wake.agent)
        except UnknownAgentError as exc:  # not this worker's agent: no provider to ask
            return template, "template", f"agent not found: {exc}", {}
        if agent.handoff_notes != "model":
            return template, "template", "handoff_notes is 'template'", {}
        items, registry = await asyncio.to_thread(
            _session_turns, ts, inp, agent.handoff_note_tokens, self.deps.counter.count
        )
        if not items:
            return template, "template", "the session has no turns to summarise", {}
        settings = agent.settings()
        model = settings.handoff_model if settings is not None else None
        # Another model than the agent's (``handoff_model``) has no cache of its prefix.
        last = await asyncio.to_thread(_last_request, ts, inp) if model is None else None
        request = None
        # The agent's cached prefix, continued by the ask; not when the prefix has likely
        # gone cold (keep-warm calls aside): rewriting it would cost more than the ask.
        if last is not None:
            window, last_text, sent_at = last
            if (inp.at - sent_at).total_seconds() <= hn.cache_ttl_s(agent.provider, window):
                ask = hn.build_prompt(
                    wake.session_id, inp.reason, items, registry, promoted, continued=True
                )
                request = hn.cached_handoff_request(
                    agent.provider, window, last_text, ask, NOTE_MAX_TOKENS, self.deps.counter.count
                )
        try:
            # No stored request to continue (or no room after it): the transcript in the ask.
            if request is None:
                prompt = hn.build_prompt(wake.session_id, inp.reason, items, registry, promoted)
                request = hn.handoff_request(
                    agent.provider, model or agent.model, prompt, NOTE_MAX_TOKENS
                )
            reply = await asyncio.wait_for(
                self.deps.provider(agent.provider).complete(request), NOTE_TIMEOUT_S
            )
        except (ProviderError, TimeoutError, ValueError) as exc:
            why = str(exc) or type(exc).__name__
            return template, "template", f"the note call failed: {why}", {}
        detail: dict[str, Any] = {
            "model": reply.model,
            "usage": reply.usage.model_dump(),
            "cost_usd": cost_usd(reply.provider, reply.model, reply.usage),
        }
        parsed = hn.parse_note(reply.text)
        if isinstance(parsed, str):
            return template, "template", f"the model's note was rejected: {parsed}", detail
        gate = hn.check_note(parsed, items, registry, promoted)
        detail["gate"] = gate.model_dump(mode="json")
        if not gate.passed:
            failed = [c for c in gate.checks if not c.passed]
            misses = "; ".join(f"{c.name}: {', '.join(c.missing)}" for c in failed)
            return template, "template", f"the model's note was rejected: {misses}", detail
        # Why the session ended is the runtime's to say, not the model's.
        head = template.current_state.split(". ", 1)[0].rstrip(".") + "."
        body = parsed.model_copy(
            update={"current_state": f"{head} {parsed.current_state.strip()}".strip()}
        )
        return body, "model", f"{len(items)} turn(s) summarised, checks passed", detail

    @activity.defn(name=KEEP_WARM)
    async def keep_warm(self, inp: KeepWarmIn) -> KeepWarmOut:
        """Re-send the session's last window with a minimal output cap: a cache read. (The
        window is read in a thread: this activity runs on the worker's event loop.)"""
        ts = self.deps.store.tenant(inp.wake.tenant)
        window = await asyncio.to_thread(ts.get_blob, inp.window_hash)
        request: dict[str, Any] = json.loads(window)
        for key, floor in _MAX_OUTPUT_KEYS.items():
            if key in request:
                request[key] = max(inp.max_tokens, floor)
        try:
            reply = await self.deps.provider(inp.runtime.provider).complete(request)
        except ProviderError as exc:
            raise ApplicationError(
                f"keep-warm call {inp.ping} after wake {inp.wake.wake_id} failed: {exc}",
                type="ProviderError",
                non_retryable=True,
            ) from exc
        u = reply.usage
        return KeepWarmOut(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_input_tokens=u.cache_read_input_tokens,
            cache_creation_input_tokens=u.cache_creation_input_tokens,
            cost_usd=cost_usd(reply.provider, reply.model, u),
        )

    @activity.defn(name=DELIVER_TRIGGER)
    async def deliver_trigger(self, inp: DeliverTriggerIn) -> DeliverTriggerOut:
        """Signal-with-start the agent's workflow with the trigger (it deduplicates the key)."""
        rt = inp.runtime
        wf_id = workflow_id(rt.tenant, rt.name)
        await activity.client().start_workflow(
            "AgentWorkflow",
            AgentInput(runtime=rt),
            id=wf_id,
            task_queue=inp.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal="trigger",
            start_signal_args=[inp.trigger],
        )
        return DeliverTriggerOut(workflow_id=wf_id)

    @activity.defn(name=RECORD_TOOL_RESULTS)
    def record_tool_results(self, inp: RecordToolResultsIn) -> RecordToolResultsOut:
        ts = self.deps.store.tenant(inp.wake.tenant)
        stored = ts.append_events(
            inp.wake.agent,
            [
                EventIn(
                    # The key run_tool would use: a late retry of the tool finds this result.
                    step_key=step_key(inp.wake, inp.call_index, "result", r.tool_call_id),
                    kind="tool_result",
                    role="user",
                    text=r.text,
                    session_id=inp.wake.session_id,
                    wake_id=inp.wake.wake_id,
                    tool_call_id=r.tool_call_id,
                    tool_name=r.tool_name,
                    is_error=r.is_error,
                    event_time=inp.at,
                    meta={"source": "workflow"},
                    user_id=inp.wake.user,
                )
                for r in inp.results
            ],
        )
        return RecordToolResultsOut(event_ids=tuple(e.id for e in stored))


def session_note(ts: TenantStore, inp: EndSessionIn, promoted: Sequence[str] = ()) -> HandoffBody:
    """The session's closing note: why it ended, plus what its wakes' notes carried.

    ``promoted``: decisions registered as the session ended (the database stamped them
    after ``inp.at``, so a read live at ``inp.at`` would leave them out)."""
    wake = inp.wake
    # What the wakes of the note's scope wrote only (``wakeful.users``).
    records = [
        n
        for n in ts.handoffs(wake.agent)
        if n.session_id == wake.session_id and visible_to(n.user_id, wake.user)
    ]
    notes = [n.body for n in records]
    last = notes[-1] if notes else HandoffBody(goal="(no wake finished)", current_state="")
    count = len({n.wake_id for n in records})
    return HandoffBody(
        goal=last.goal,
        current_state=(
            f"Session {wake.session_id} ended ({inp.reason}) after {count} wake(s)."
            f" {last.current_state}"
        ).strip(),
        decisions=_union(
            [
                [
                    d.decision_id
                    for d in ts.live_decisions(wake.agent, inp.at)
                    if visible_to(d.user_id, wake.user)
                ],
                promoted,
            ]
        ),
        blockers=_union(n.blockers for n in notes)[-10:],
        next_actions=next((n.next_actions for n in reversed(notes) if n.next_actions), []),
        evidence=_union(n.evidence for n in notes)[-20:],
    )


def _session_turns(
    ts: TenantStore, inp: EndSessionIn, max_tokens: int, count: Callable[[str], int]
) -> tuple[list[SpanItem], list[DecisionRecord]]:
    """The session's newest live turns, within ``max_tokens``, and the live registry."""
    wake = inp.wake
    events = ts.events(wake.agent, include_retired=False, limit=_NOTE_EVENTS, newest=True)
    turns = [
        e
        for e in events
        if e.session_id == wake.session_id and e.kind == "turn" and visible_to(e.user_id, wake.user)
    ]
    kept: list[SpanItem] = []
    used = 0
    for e in reversed(turns):
        used += count(e.text)
        if used > max_tokens and kept:
            break
        kept.append(item_of(e))
    kept.reverse()
    # Decisions promoted as the session ended were stamped after ``inp.at``: read them live.
    live = ts.live_decisions(wake.agent, max(inp.at, datetime.now(UTC)))
    return kept, [d for d in live if visible_to(d.user_id, wake.user)]


def _last_request(
    ts: TenantStore, inp: EndSessionIn
) -> tuple[dict[str, Any], str, datetime] | None:
    """The session's last model request, as sent, the text of its reply and when its wake
    ended (just after it was sent: the last call is the wake's last step); None when the
    session made no model call. Runs in a thread."""
    wakes = [w for w in ts.wakes(inp.wake.agent) if w.session_id == inp.wake.session_id]
    for w in reversed(wakes):  # the ending wake (a /handoff) may have made no call
        calls = ts.model_calls(w.wake_id)
        if calls:
            call = max(calls, key=lambda c: c.call_index)
            window: dict[str, Any] = json.loads(ts.get_blob(call.window_hash))
            reply = ModelReply.model_validate_json(ts.get_blob(call.output_hash))
            return window, reply.text, w.finished_at or w.started_at
    return None


def _union(lists: Any) -> list[str]:
    out: list[str] = []
    for items in lists:
        out += [i for i in items if i not in out]
    return out


def _result(ts: TenantStore, w: WakeRecord) -> WakeResult:
    calls = ts.model_calls(w.wake_id)
    return WakeResult(
        wake_id=w.wake_id,
        number=w.number,
        session_id=w.session_id,
        status=w.status,
        model_calls=len(calls),
        tool_calls=sum(1 for e in ts.events(w.agent, wake_id=w.wake_id) if e.kind == "tool_result"),
        input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        cache_read_input_tokens=sum(c.cache_read_input_tokens for c in calls),
        cache_creation_input_tokens=sum(c.cache_creation_input_tokens for c in calls),
        cost_usd=sum(c.cost_usd for c in calls),
        handoff_id=0,
        idempotency_key=w.idempotency_key or "",
    )
