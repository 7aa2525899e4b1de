"""``AgentWorkflow``: one long-lived workflow per agent, woken by triggers.

Each trigger carries an idempotency key; the workflow remembers recent keys (carried across
continue-as-new), so a trigger delivered twice wakes the agent once. A wake runs
``compile -> call_model -> record -> (run_tool* -> compile -> call_model -> record)*`` until
the model stops or a per-wake budget is hit, then writes a handoff note.

Only ids, hashes and counters cross the activity boundary, so the history of a month-long
agent stays small; the workflow continues-as-new when Temporal suggests it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from wakeful.agents import AgentRuntime
    from wakeful.compiler.blocks import Goal
    from wakeful.contracts import (
        CALL_MODEL,
        COMPILE,
        FINISH_WAKE,
        RECORD_OUTPUT,
        RUN_TOOL,
        START_WAKE,
        CallModelIn,
        CallModelOut,
        CompileIn,
        CompileOut,
        FinishWakeIn,
        FinishWakeOut,
        RecordOutputIn,
        RecordOutputOut,
        RunToolIn,
        RunToolOut,
        StartWakeIn,
        StartWakeOut,
        Trigger,
        WakeRef,
        WakeResult,
    )

# Remembered wake results (with their idempotency keys); bounded so that a long-lived
# agent's state stays small.
_MEMORY = 256
_WAKES_PER_RUN = 200

_STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)
)
_MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=2),
    maximum_attempts=8,
)


class AgentState(BaseModel):
    wakes: int = 0
    session_number: int = 0
    session_id: str = ""
    last_wake_at: datetime | None = None
    results: list[WakeResult] = Field(default_factory=list)
    pending: list[Trigger] = Field(default_factory=list)
    cost_usd: float = 0.0
    input_tokens: int = 0
    cache_read_input_tokens: int = 0


class AgentInput(BaseModel):
    runtime: AgentRuntime
    state: AgentState = Field(default_factory=AgentState)
    session_idle: timedelta = timedelta(hours=1)


class AgentStatus(BaseModel):
    agent: str
    wakes: int
    session_id: str
    current_wake: str | None
    pending: int
    cost_usd: float
    input_tokens: int
    cache_read_input_tokens: int
    last_wake_at: datetime | None


def workflow_id(tenant: str, agent: str) -> str:
    return f"wakeful-agent:{tenant}:{agent}"


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow:
    @workflow.init
    def __init__(self, inp: AgentInput) -> None:
        # Set from the input here, not in run(): a signal or update delivered with the start
        # is handled before run() begins and must land in this state.
        self.state = inp.state
        self.current: str | None = None
        self.current_key: str | None = None
        self.stop_requested = False

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentState:
        rt = inp.runtime
        wakes_this_run = 0
        while True:
            await workflow.wait_condition(lambda: bool(self.state.pending) or self.stop_requested)
            if not self.state.pending:
                break
            trigger = self.state.pending.pop(0)
            self.current_key = trigger.idempotency_key
            self._remember(await self._wake(rt, trigger, inp.session_idle))
            self.current_key = None
            wakes_this_run += 1
            if wakes_this_run >= _WAKES_PER_RUN or workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    AgentInput(runtime=rt, state=self.state, session_idle=inp.session_idle)
                )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.state

    # --- triggers -----------------------------------------------------------------------

    def _accept(self, trigger: Trigger) -> bool:
        key = trigger.idempotency_key
        if (
            key == self.current_key
            or self._result(key) is not None
            or any(p.idempotency_key == key for p in self.state.pending)
        ):
            return False
        self.state.pending.append(trigger)
        return True

    @workflow.signal(name="trigger")
    def trigger(self, trigger: Trigger) -> None:
        self._accept(trigger)

    @workflow.update(name="wake")
    async def wake(self, trigger: Trigger) -> WakeResult:
        """Deliver a trigger and wait for its wake (or the earlier wake with the same key)."""
        fresh = self._accept(trigger)
        key = trigger.idempotency_key
        await workflow.wait_condition(lambda: self._result(key) is not None)
        result = self._result(key)
        assert result is not None
        return result if fresh else result.model_copy(update={"deduplicated": True})

    @workflow.signal(name="stop")
    def stop(self) -> None:
        self.stop_requested = True

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        return AgentStatus(
            agent=workflow.info().workflow_id,
            wakes=self.state.wakes,
            session_id=self.state.session_id,
            current_wake=self.current,
            pending=len(self.state.pending),
            cost_usd=self.state.cost_usd,
            input_tokens=self.state.input_tokens,
            cache_read_input_tokens=self.state.cache_read_input_tokens,
            last_wake_at=self.state.last_wake_at,
        )

    def _result(self, key: str) -> WakeResult | None:
        return next((r for r in self.state.results if r.idempotency_key == key), None)

    def _remember(self, result: WakeResult) -> None:
        self.state.results = [*self.state.results, result][-_MEMORY:]

    # --- one wake -----------------------------------------------------------------------

    def _session_for(self, trigger: Trigger, idle: timedelta) -> str:
        now = workflow.now()
        last = self.state.last_wake_at
        gap_exceeded = last is not None and now - last > idle
        if not self.state.session_id or trigger.new_session or gap_exceeded:
            self.state.session_number += 1
            self.state.session_id = f"s{self.state.session_number:04d}"
        return self.state.session_id

    async def _wake(self, rt: AgentRuntime, trigger: Trigger, idle: timedelta) -> WakeResult:
        session_id = self._session_for(trigger, idle)
        self.state.wakes += 1
        number = self.state.wakes
        wake = WakeRef(
            tenant=rt.tenant,
            agent=rt.name,
            wake_id=f"{rt.name}:{number}",
            session_id=f"{rt.name}:{session_id}",
            workflow_id=workflow.info().workflow_id,
            number=number,
        )
        self.current = wake.wake_id
        goal: Goal = trigger.goal
        await workflow.execute_activity(
            START_WAKE,
            StartWakeIn(
                wake=wake,
                goal=goal,
                idempotency_key=trigger.idempotency_key,
                started_at=workflow.now(),
            ),
            result_type=StartWakeOut,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=_STORE_RETRY,
        )
        calls = tools = 0
        totals = CallModelOut(output_hash="", stop_reason="")
        status = "done"
        for index in range(rt.max_model_calls_per_wake):
            compiled = await workflow.execute_activity(
                COMPILE,
                CompileIn(wake=wake, runtime=rt, goal=goal, call_index=index, now=workflow.now()),
                result_type=CompileOut,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=_STORE_RETRY,
            )
            reply = await workflow.execute_activity(
                CALL_MODEL,
                CallModelIn(
                    wake=wake, runtime=rt, call_index=index, window_hash=compiled.window_hash
                ),
                result_type=CallModelOut,
                start_to_close_timeout=timedelta(minutes=5),
                retry_policy=_MODEL_RETRY,
            )
            calls += 1
            totals = _add(totals, reply)
            await workflow.execute_activity(
                RECORD_OUTPUT,
                RecordOutputIn(
                    wake=wake, call_index=index, output_hash=reply.output_hash, at=workflow.now()
                ),
                result_type=RecordOutputOut,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=_STORE_RETRY,
            )
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                limits = next((t for t in rt.tools if t.name == call.name), None)
                await workflow.execute_activity(
                    RUN_TOOL,
                    RunToolIn(
                        wake=wake,
                        call_index=index,
                        output_hash=reply.output_hash,
                        tool_call=call,
                        at=workflow.now(),
                    ),
                    result_type=RunToolOut,
                    start_to_close_timeout=timedelta(seconds=limits.timeout_s if limits else 60),
                    heartbeat_timeout=(
                        timedelta(seconds=limits.heartbeat_s)
                        if limits and limits.heartbeat_s
                        else None
                    ),
                    retry_policy=RetryPolicy(maximum_attempts=limits.max_attempts if limits else 3),
                )
                tools += 1
            if tools >= rt.max_tool_calls_per_wake:
                status = "tool_budget"
                break
            if totals.input_tokens + totals.cache_read_input_tokens >= rt.max_tokens_per_wake:
                status = "token_budget"
                break
        else:
            status = "call_budget"

        done = await workflow.execute_activity(
            FINISH_WAKE,
            FinishWakeIn(
                wake=wake,
                goal=goal,
                status=status,
                at=workflow.now(),
                model_calls=calls,
                tool_calls=tools,
            ),
            result_type=FinishWakeOut,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=_STORE_RETRY,
        )
        self.current = None
        self.state.last_wake_at = workflow.now()
        self.state.cost_usd += totals.cost_usd
        self.state.input_tokens += totals.input_tokens
        self.state.cache_read_input_tokens += totals.cache_read_input_tokens
        return WakeResult(
            wake_id=wake.wake_id,
            number=number,
            session_id=wake.session_id,
            status=status,
            model_calls=calls,
            tool_calls=tools,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cache_read_input_tokens=totals.cache_read_input_tokens,
            cache_creation_input_tokens=totals.cache_creation_input_tokens,
            cost_usd=totals.cost_usd,
            handoff_id=done.handoff_id,
            idempotency_key=trigger.idempotency_key,
        )


def _add(a: CallModelOut, b: CallModelOut) -> CallModelOut:
    return CallModelOut(
        output_hash=b.output_hash,
        stop_reason=b.stop_reason,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_creation_input_tokens=a.cache_creation_input_tokens + b.cache_creation_input_tokens,
        cache_read_input_tokens=a.cache_read_input_tokens + b.cache_read_input_tokens,
        cost_usd=a.cost_usd + b.cost_usd,
    )
