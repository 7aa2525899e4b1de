"""``AgentWorkflow``: one long-lived workflow per agent, woken by triggers.

Triggers arrive as the ``trigger`` signal (signal-with-start: webhooks, schedules) or the
``wake`` update (update-with-start: wait for the wake's result). Each carries an idempotency
key; the workflow remembers recent keys (carried across continue-as-new, recovered from the
substrate when it starts afresh), so a trigger delivered twice wakes the agent once.

Before each wake the workflow prices its options with :func:`wakeful.workflows.pacing.decide`
(continue the warm or cold session, or hand off to a fresh one) and the decision goes into
the first compile's ledger. A wake is a :class:`~wakeful.workflows.cycle.WakeCycle`; the
model's ``delegate`` calls fan out to child workflows. Sessions end — with a handoff note
that the next session compiles from — on an explicit ``/handoff`` message, after
``session_idle`` without a wake (unless no ``handoff_after_idle`` was set and pacing prices
continuing the session cheaper than a handoff), when a wake spends its budget, when pacing
chooses a handoff, or on stop. While idle, the workflow may keep the prompt cache warm when the next
wake is known and a keep-warm call is cheaper than a miss.

Only ids, hashes and counters cross the activity boundary, so a month-long agent's history
stays small; the workflow continues-as-new before it grows large, and only when no update
handler is running (a caller waiting on its wake is never answered by a closing run).
Triggers larger than ``MAX_TRIGGER_BYTES`` are refused: the ``wake`` update by its validator,
before it enters the history; a ``trigger`` signal (which cannot be refused) is answered
``rejected: ...`` and wakes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from wakeful.consolidation.contracts import ConsolidationInput
    from wakeful.consolidation.policy import consolidation_policy
    from wakeful.contracts import (
        APPROVALS_QUERY,
        APPROVE_UPDATE,
        FIND_WAKE,
        RESULT_QUERY,
        ApprovalDecision,
        CallModelOut,
        CompileOut,
        FindWakeIn,
        FindWakeOut,
        PendingApproval,
        SpendCeiling,
        ToolCallRef,
        Trigger,
        WakeRef,
        WakeResult,
        oversized_trigger,
        without_answer,
    )
    from wakeful.workflows.alarm import Alarm
    from wakeful.workflows.approvals import Approvals
    from wakeful.workflows.cache import pacing_annotations, rates_for, update_clock, wake_cache
    from wakeful.workflows.child import delegate_calls
    from wakeful.workflows.consolidation import consolidate_history
    from wakeful.workflows.cycle import WakeAnswer, WakeCycle, store
    from wakeful.workflows.details import show
    from wakeful.workflows.pacing import (
        CacheTtls,
        CacheWrite,
        PacingInput,
        PacingPolicy,
        cache_ttls,
        decide,
    )
    from wakeful.workflows.sessions import HANDOFF_PRICE, Sessions
    from wakeful.workflows.state import (
        AgentInput,
        AgentState,
        AgentStatus,
        WakeBudget,
        child_workflow_id,
        workflow_id,
    )

__all__ = [
    "AgentInput",
    "AgentState",
    "AgentStatus",
    "AgentWorkflow",
    "WakeBudget",
    "child_workflow_id",
    "workflow_id",
]

# Wake results (with their idempotency keys) are remembered up to
# ``AgentInput.remembered_results``, so that a long-lived agent's state stays small; a key
# let go of is looked up in the substrate when a trigger repeats it.
_MAX_HISTORY_EVENTS = 5_000
_MAX_HISTORY_BYTES = 4 * 1024 * 1024
_BUDGET_END = ("tool_budget", "token_budget", "call_budget")
# Patch id: an oversized trigger signal is answered "rejected" instead of waking the agent.
_REFUSE_OVERSIZED = "refuse-oversized-triggers"
# Patch id: session timers are one Alarm across wakes, not a timeout per wait.
_ALARM = "session-alarm-1"
# Patch id: a trigger whose key the workflow let go of is looked up before it wakes.
_DURABLE_DEDUPE = "durable-dedupe-1"
# A wake whose window's history reached budget.consolidate_at starts a consolidation round.
_CONSOLIDATE_HISTORY = "consolidate-history-1"
# Patch id: a firing trigger whose action is 'handoff' ends the session after the wake.
TRIGGER_HANDOFF = "trigger-handoff-1"
# Patch id: the wake update answers without the answer text, which the history already
# holds once (the model call's result); the client reads it with the ``result`` query.
_ANSWER_BY_QUERY = "answer-by-query-1"
# Patch id: the 1 h TTL's premium is priced on what wakes added, not on the prefixes they
# rewrote after it expired (pacing.cache_ttls).
TTL_ADDED = "cache-ttl-added-1"
# Patch id: a wake's first call writes no session cache entry when nothing is likely to
# read it in time (pacing.first_call_write).
FIRST_CALL_WRITE = "first-call-write-1"


def is_handoff_command(trigger: Trigger) -> bool:
    words = trigger.goal.text.split(maxsplit=1)
    return bool(words) and words[0] == "/handoff"


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow:
    @workflow.init
    def __init__(self, inp: AgentInput) -> None:
        # Set from the input here, not in run(): a signal or update delivered with the start
        # is handled before run() begins and must land in this state.
        self.state = inp.state
        self.rt = inp.runtime
        self.sessions = Sessions(self.state, inp.runtime)
        self.current: str | None = None
        self.current_key: str | None = None
        self.cycle: WakeCycle | None = None
        self.stop_requested = False
        self.children_in_flight = 0
        self.alarm = Alarm()
        self.memory = inp.remembered_results
        self.approvals = Approvals()  # tool calls of the current wake awaiting a decision
        self.history_full = False  # the wake's latest window reached budget.consolidate_at
        self.handoff_by = ""  # the trigger of the wake's latest window that asked for a handoff

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentState:
        if not self.state.resumed and self.state.wakes == 0:
            await self.sessions.resume()
        wakes_this_run = 0
        while not self.stop_requested:
            show(self.rt, self.state, "waiting for a trigger")
            if not await self._wait_for_work(inp):
                await self.sessions.on_timer(
                    inp.session_idle, self._policy(inp), inp.session_idle_set
                )
                continue
            if self.stop_requested:
                break
            trigger = self.state.pending.pop(0)
            self.current_key = trigger.idempotency_key
            earlier = await self._woken_before(trigger)
            if earlier is not None:
                result = earlier
            elif is_handoff_command(trigger):
                result = await self.sessions.handoff_command(trigger)
            else:
                result = await self._wake(trigger, inp)
            self._remember(result)
            self.current_key = None
            wakes_this_run += 1
            if self._history_is_large(wakes_this_run, inp) and not self.state.pending:
                # Never continue-as-new under a running handler: its caller would be answered
                # by the closing run's error, not its wake. A trigger arriving meanwhile is
                # served first; the next wake checks again.
                await workflow.wait_condition(
                    lambda: workflow.all_handlers_finished() or bool(self.state.pending)
                )
                if not self.state.pending and workflow.all_handlers_finished():
                    workflow.continue_as_new(inp.model_copy(update={"state": self.state}))
        await self.sessions.end("stopped")
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.state

    async def _wait_for_work(self, inp: AgentInput) -> bool:
        """Wait for a trigger or a stop; False when a session timer (keep-warm, idle) is due."""
        due = self.sessions.next_timer(inp.session_idle)
        timeout = None if due is None else due - workflow.now()
        if timeout is not None and timeout <= timedelta(0):
            return bool(self.state.pending) or self.stop_requested
        if due is not None and workflow.patched(_ALARM):
            self.alarm.arm(due)
            await workflow.wait_condition(
                lambda: bool(self.state.pending) or self.stop_requested or self.alarm.rang()
            )
            if self.state.pending or self.stop_requested:
                return True
            self.alarm.clear()
            return False  # the caller checks what is due; an early ring finds nothing
        try:
            await workflow.wait_condition(
                lambda: bool(self.state.pending) or self.stop_requested, timeout=timeout
            )
        except TimeoutError:
            return False
        return True

    def _history_is_large(self, wakes_this_run: int, inp: AgentInput) -> bool:
        info = workflow.info()
        return (
            wakes_this_run >= inp.wakes_per_run
            or info.is_continue_as_new_suggested()
            or info.get_current_history_length() > _MAX_HISTORY_EVENTS
            or info.get_current_history_size() > _MAX_HISTORY_BYTES
        )

    # --- triggers -----------------------------------------------------------------------

    def _accept(self, trigger: Trigger) -> bool:
        key = trigger.idempotency_key
        if (
            key == self.current_key
            or self._result(key) is not None
            or any(p.idempotency_key == key for p in self.state.pending)
        ):
            return False
        if self.stop_requested:  # answered at once, so no caller waits on a stopping agent
            self._remember(_not_run(trigger, "not_run: the agent is stopping"))
            return True
        self.state.pending.append(trigger)
        return True

    @workflow.signal(name="trigger")
    def trigger(self, trigger: Trigger) -> None:
        """Deliver a trigger without waiting. A signal cannot be refused, so an oversized one
        (sent past the client's check) is answered ``rejected: ...`` and never wakes the agent
        nor rides along in the state."""
        why = oversized_trigger(trigger, self.rt.name)
        if why is not None and workflow.patched(_REFUSE_OVERSIZED):
            key = trigger.idempotency_key
            if key != self.current_key and self._result(key) is None:
                workflow.logger.warning("trigger refused: %s", why)
                self._remember(_not_run(trigger, f"rejected: {why}"))
            return
        self._accept(trigger)

    @workflow.update(name="wake")
    async def wake(self, trigger: Trigger) -> WakeResult:
        """Deliver a trigger and wait for its wake (or the earlier wake with the same key)."""
        fresh = self._accept(trigger)
        key = trigger.idempotency_key
        await workflow.wait_condition(lambda: self._result(key) is not None)
        result = self._result(key)
        assert result is not None
        out = result if fresh else result.model_copy(update={"deduplicated": True})
        # Asked only for a result with an answer: histories without one replay unmarked.
        if out.output and workflow.patched(_ANSWER_BY_QUERY):
            return without_answer(out)
        return out

    @wake.validator
    def _check_wake(self, trigger: Trigger) -> None:
        """Refuse an oversized trigger before it is accepted: a rejected update is never
        written into the history, so one huge message cannot bloat it (or force an early
        continue-as-new)."""
        why = oversized_trigger(trigger, self.rt.name)
        if why is not None:
            raise ApplicationError(why, type="TriggerTooLarge", non_retryable=True)

    @workflow.signal(name="stop")
    def stop(self) -> None:
        """End the current wake at its next step, close the session, and complete."""
        self.stop_requested = True
        for trigger in self.state.pending:
            self._remember(_not_run(trigger, "not_run: the agent was stopped"))
        self.state.pending = []

    @workflow.update(name=APPROVE_UPDATE)
    def approve(self, decision: ApprovalDecision) -> PendingApproval:
        """Decide a tool call waiting for approval: approved, it runs; denied, the model
        reads ``denied by <by>: <reason>`` as its result. Answers the call decided."""
        return self.approvals.decide(decision)

    @approve.validator
    def _check_approve(self, decision: ApprovalDecision) -> None:
        """Refuse a decision for a call that is not waiting (unknown, decided, timed out)
        before it enters the history."""
        if decision.call_id not in self.approvals.pending:
            waiting = ", ".join(self.approvals.pending) or "none"
            raise ApplicationError(
                f"no tool call {decision.call_id!r} waits for approval (waiting: {waiting})",
                type="UnknownApprovalCall",
                non_retryable=True,
            )

    @workflow.query(name=APPROVALS_QUERY)
    def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls of the current wake that wait for a person's decision."""
        return self.approvals.listing()

    @workflow.query(name=RESULT_QUERY)
    def wake_result(self, idempotency_key: str) -> WakeResult | None:
        """A remembered wake's result, whole (the wake update leaves its answer out)."""
        return self._result(idempotency_key)

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        s = self.state
        return AgentStatus(
            agent=workflow.info().workflow_id,
            wakes=s.wakes,
            session_id=s.session_id,
            current_wake=self.current,
            pending=len(s.pending),
            cost_usd=s.cost_usd,
            input_tokens=s.input_tokens,
            cache_read_input_tokens=s.cache_read_input_tokens,
            last_wake_at=s.last_wake_at,
            session_open=s.session_open,
            stop_requested=self.stop_requested,
            budget=self.cycle.budget if self.cycle is not None else None,
            cache_clock=s.clock,
            pacing=s.pacing.reason if s.pacing is not None else "",
            children_in_flight=self.children_in_flight,
        )

    def _result(self, key: str) -> WakeResult | None:
        return next((r for r in self.state.results if r.idempotency_key == key), None)

    def _remember(self, result: WakeResult) -> None:
        results = [*self.state.results, result]
        if len(results) > self.memory:
            self.state.forgotten = True
        self.state.results = results[-self.memory :]

    async def _woken_before(self, trigger: Trigger) -> WakeResult | None:
        """The earlier wake for this trigger's key, once the workflow may have let it go:
        the same event never wakes the agent twice, however many wakes ago it did. Asked
        only then, so the patch marker is in no history that never let a result go."""
        if not self.state.forgotten or not workflow.patched(_DURABLE_DEDUPE):
            return None
        rt = self.rt
        found = await store(
            FIND_WAKE,
            FindWakeIn(tenant=rt.tenant, agent=rt.name, idempotency_key=trigger.idempotency_key),
            FindWakeOut,
        )
        if found.result is None:
            return None
        return found.result.model_copy(update={"deduplicated": True})

    # --- one wake -----------------------------------------------------------------------

    def _policy(self, inp: AgentInput) -> PacingPolicy:
        calls = self.state.last_model_calls or inp.pacing.expected_calls
        return inp.pacing.model_copy(update={"max_idle": inp.session_idle, "expected_calls": calls})

    async def _wake(self, trigger: Trigger, inp: AgentInput) -> WakeResult:
        rt, s = self.rt, self.state
        policy = self._policy(inp)
        s.clock = s.clock.with_gap(workflow.now())
        # Only Anthropic takes TTLs per breakpoint; the others keep prefixes as they do.
        adaptive = policy.adaptive_ttl and rt.provider == "anthropic"
        ttls, first_ttls, write = self._cache_plan(adaptive)
        decision = decide(
            PacingInput(
                now=workflow.now(),
                clock=s.clock,
                rates=rates_for(rt.provider, rt.model),
                policy=self.sessions.idle_policy(policy, workflow.now(), inp.session_idle_set),
                session_open=s.session_open,
                # No patch marker needed: until now every clock in a history was kept for
                # its run's own runtime (continue-as-new keeps it), so none was foreign.
                provider=rt.provider,
                model=rt.model,
                price_next_session=workflow.patched(HANDOFF_PRICE),
            )
        )
        s.pacing, s.keep_warm_at = decision, []  # a wake replaces any keep-warm plan
        session_note = await self.sessions.choose(trigger, decision)
        s.wakes += 1
        number = s.wakes
        wake = WakeRef(
            tenant=rt.tenant,
            agent=rt.name,
            wake_id=f"{rt.name}:{number}",
            session_id=f"{rt.name}:{s.session_id}",
            workflow_id=workflow.info().workflow_id,
            number=number,
            # Only in the activities' inputs (left out when None): no command changes.
            user=trigger.user,
        )
        self.current = wake.wake_id
        show(rt, s, f"wake #{number}: {trigger.goal.kind.value}, pacing chose {decision.choice}")
        notes, s.idle_notes = s.idle_notes, []
        self.cycle = cycle = WakeCycle(
            rt,
            wake,
            trigger.goal,
            trigger.idempotency_key,
            annotations=pacing_annotations(decision, session_note, notes, ttls, write),
            # every compile needs the TTLs, not the words (kept out of the history)
            ttls=ttls.model_copy(update={"why": ""}) if ttls is not None else None,
            first_ttls=first_ttls,
            stop=lambda: self.stop_requested,
            on_call=self._on_call,
            delegate=self._delegate,
            approvals=self.approvals,
        )
        done = await cycle.run()
        totals = cycle.totals
        s.last_wake, s.last_wake_at = wake, workflow.now()
        s.last_model_calls = cycle.budget.model_calls
        s.cost_usd += totals.cost_usd
        s.input_tokens += totals.input_tokens
        s.cache_read_input_tokens += totals.cache_read_input_tokens
        self.current, self.cycle = None, None
        if self.history_full and workflow.patched(_CONSOLIDATE_HISTORY):
            await consolidate_history(
                ConsolidationInput(runtime=rt, policy=consolidation_policy(rt))
            )
        self.history_full = False
        handoff_by, self.handoff_by = self.handoff_by, ""
        if handoff_by and workflow.patched(TRIGGER_HANDOFF):
            await self.sessions.end(f"trigger {handoff_by}: handoff after the wake")
        elif cycle.status in _BUDGET_END:
            await self.sessions.end(f"budget: the wake ended with {cycle.status}")
        elif trigger.next_expected_at is not None and not s.pending and not self.stop_requested:
            await self.sessions.plan_idle(trigger.next_expected_at, policy, inp.session_idle_set)
        return WakeResult(
            wake_id=wake.wake_id,
            number=number,
            session_id=wake.session_id,
            status=cycle.status,
            model_calls=cycle.budget.model_calls,
            tool_calls=cycle.budget.tool_calls,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cache_read_input_tokens=totals.cache_read_input_tokens,
            cache_creation_input_tokens=totals.cache_creation_input_tokens,
            cost_usd=totals.cost_usd,
            handoff_id=done.handoff_id,
            idempotency_key=trigger.idempotency_key,
            pacing=decision.choice,
            error=cycle.error,
            **answer_fields(cycle.answer),
        )

    def _cache_plan(
        self, adaptive: bool
    ) -> tuple[CacheTtls | None, CacheTtls | None, CacheWrite | None]:
        """The wake's cache TTLs, its first call's when they differ, and why (see
        ``wake_cache``); each newer rule only in histories that take its patch."""
        if not adaptive:
            return None, None, None
        rt, s = self.rt, self.state
        rates = rates_for(rt.provider, rt.model)
        if not workflow.patched(TTL_ADDED):
            return cache_ttls(s.clock, rates, added_only=False), None, None
        plan = wake_cache(s.clock, rates, workflow.now())
        # Asked only when the rule skips the write: histories where it never did need no marker.
        if plan.write.write or not workflow.patched(FIRST_CALL_WRITE):
            return plan.ttls, None, plan.write if plan.write.write else None
        return plan.ttls, plan.first, plan.write

    def _on_call(self, compiled: CompileOut, reply: CallModelOut, started: datetime) -> None:
        s = self.state
        calls = self.cycle.budget.model_calls if self.cycle is not None else 0
        show(self.rt, s, f"wake {self.current}: {calls} model calls, last {reply.stop_reason}")
        s.clock = update_clock(s.clock, self.rt.provider, self.rt.model, compiled, reply, started)
        s.last_window_hash = compiled.window_hash
        self.history_full = compiled.consolidate  # the wake's latest window decides
        self.handoff_by = compiled.handoff

    async def _delegate(
        self,
        wake: WakeRef,
        index: int,
        reply: CallModelOut,
        calls: list[ToolCallRef],
        left: SpendCeiling | None,
    ) -> float:
        """Run the children (within ``left`` of the spend caps, if capped); returns what
        the wake's spend cap counts as spent on them (what they cost; see within_caps)."""
        self.children_in_flight += len(calls)
        try:
            started, results, charged = await delegate_calls(
                wake, index, reply, calls, first_child=self.state.children + 1, left=left
            )
        finally:
            self.children_in_flight -= len(calls)
        self.state.children += started
        self.state.cost_usd += sum(r.cost_usd for r in results)
        return charged


def _not_run(trigger: Trigger, status: str) -> WakeResult:
    return WakeResult.without_calls(trigger.idempotency_key, status)


def answer_fields(answer: WakeAnswer | None) -> dict[str, Any]:
    """A wake result's answer: the capped text and, when it was cut, where the whole of it
    is stored (a reference the history need not carry when the text is all there)."""
    if answer is None:
        return {}
    truncated = answer.chars > len(answer.text)
    return {
        "output": answer.text,
        "output_truncated": truncated,
        "output_ref": answer.ref if truncated else "",
    }
