"""One wake cycle, shared by agents and child agents.

    [compile (the first opens the wake) -> call_model (stores and records the reply;
     the last one, calling no tools, closes the wake) -> tools*]*

The steps that always run back to back share one step, which halves a wake's history: a
wake with two model calls and a tool is two compiles, two model calls and a tool. A wake
ending any other way (a stop, a budget, a failure) is closed by ``finish_wake``.

It ends when the model stops calling tools, a budget (model calls, tool calls, input tokens)
is spent or the next window would overspend it (that window is not sent), a spend cap is
reached (``budget``: the wake's or the day's dollars or tokens, see ``spend``), a stop is
requested, or the model call fails for good (``model_error``: a 400, or retries exhausted).
Every tool call of a reply gets a recorded result — run, failed, handed to child agents, or
cancelled by a stop — so the transcript never holds an unanswered call.
Only ids, hashes and counters cross the activity boundary.

Runs that started before the steps were merged (no ``FEWER_STEPS`` patch marker in their
history) keep ``start_wake``, ``record_output`` and ``finish_wake`` as steps of their own, so
they replay unchanged. Likewise a window over the token budget is held back only in runs
that record the ``TOKEN_PRECHECK`` marker (asked for only when it holds one back).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as ActivityTimeout

with workflow.unsafe.imports_passed_through():
    from wakeful.agents import AgentRuntime, ApprovalPolicy, ToolLimits
    from wakeful.compiler.blocks import Goal
    from wakeful.contracts import (
        CALL_MODEL,
        COMPILE,
        DELEGATE_TOOL,
        FINISH_WAKE,
        RECORD_OUTPUT,
        RECORD_TOOL_RESULTS,
        RUN_TOOL,
        START_WAKE,
        ApprovalDecision,
        CacheTtls,
        CallModelIn,
        CallModelOut,
        CompileIn,
        CompileOut,
        FinishWakeIn,
        FinishWakeOut,
        LedgerAnnotations,
        PendingApproval,
        RecordOutputIn,
        RecordOutputOut,
        RecordToolResultsIn,
        RecordToolResultsOut,
        RunToolIn,
        RunToolOut,
        SpendCeiling,
        StartWakeIn,
        StartWakeOut,
        ToolCallRef,
        ToolResultIn,
        WakeRef,
    )
    from wakeful.failures import model_text
    from wakeful.wake_trace import wake_scope
    from wakeful.workflows import retries as p
    from wakeful.workflows.approvals import Approvals, denial_text, timeout_text
    from wakeful.workflows.spend import ceiling_cap, has_cap, spend_cap, spend_left
    from wakeful.workflows.state import WakeBudget

__all__ = [
    "ACTIVITY_FAILURES",
    "CHILD_CEILING",
    "FEWER_STEPS",
    "INTENT_SPEND",
    "LOCAL_TOOLS",
    "TOKEN_PRECHECK",
    "TOOL_ATTEMPTS",
    "TYPED_ANSWER",
    "WakeCycle",
    "act",
    "add_usage",
    "failure",
    "store",
]

# Patch id: the first compile opens the wake, call_model records its reply and closes a wake
# whose reply calls no tools.
FEWER_STEPS = "fewer-wake-steps-1"
# Patch id: a compiled window that would take the wake past its token budget is not sent.
TOKEN_PRECHECK = "token-precheck-1"
# Patch id: tools declared ``local`` run as local activities (no task-queue round trip).
LOCAL_TOOLS = "local-tools-1"
# Patch id: a wake's spend cap counts what the children it delegated to spent.
CHILD_SPEND = "child-spend-1"
# Patch id: a capped agent's delegations run one child at a time, each under what is left
# of the agent's caps (asked only when a capped agent delegates).
CHILD_CEILING = "child-ceiling-1"
# Patch id: a wake's spend counts the model call that classified its goal's intents.
INTENT_SPEND = "intent-spend-1"
# Patch id: a tool's max_attempts counts its own failures only; the store's and the
# worker's are retried without limit and never reach the transcript.
TOOL_ATTEMPTS = "tool-attempts-1"
# Patch id: an agent with output_type that replies in text is asked again for its answer
# (at most TEXT_REPLIES_ASKED_AGAIN times), then the wake ends ``no_answer``; it ended
# ``done`` with the text, whatever output_as then read from it.
TYPED_ANSWER = "typed-answer-1"
TEXT_REPLIES_ASKED_AGAIN = 2

R = TypeVar("R")

# What an activity that failed for good raises in a workflow, in every shape. A regular
# activity's failure is an ActivityError. A local activity's is not always: an application
# error arrives as the ApplicationError itself, and a timeout arrives as
# ActivityError(cause=TimeoutError) when it happens but as the bare TimeoutError when a
# worker replays its marker (temporalio 1.35). Catching fewer shapes made a local tool that
# timed out a tool error when it ran and an exception that failed the workflow on replay:
# the replay then never scheduled the next local activity, whose marker was in the history
# ("[TMPRL1100] Nondeterminism error: Missing associated machine for LocalActivity(5)"),
# and every later trigger of the agent failed the same way.
ACTIVITY_FAILURES = (ActivityError, ApplicationError, ActivityTimeout)

OnCall = Callable[[CompileOut, CallModelOut, datetime], None]
# Runs a reply's delegate calls within what is left of the agent's spend caps (None: not
# capped, or a run from before children were held to them); returns the dollars the wake's
# spend cap counts as spent on them (what they cost; see child.within_caps).
Delegate = Callable[
    [WakeRef, int, CallModelOut, list[ToolCallRef], SpendCeiling | None], Awaitable[float]
]


async def act(
    name: str,
    arg: Any,
    result_type: type[R],
    start_to_close: timedelta,
    retry: RetryPolicy,
    heartbeat: timedelta | None = None,
    summary: str | None = None,
) -> R:
    """Run one activity by its wire name on any worker (model calls, tools, deliveries)."""
    result: R = await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=start_to_close,
        heartbeat_timeout=heartbeat,
        retry_policy=retry,
        summary=summary,
    )
    return result


async def store(
    name: str, arg: Any, result_type: type[R], start_to_close: timedelta = p.STORE_TIMEOUT
) -> R:
    """Run a substrate activity locally: short, idempotent reads and writes (see policies)."""
    result: R = await workflow.execute_local_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=start_to_close,
        retry_policy=p.STORE_RETRY,
    )
    return result


def failure(err: BaseException) -> str:
    """The innermost message of an activity failure (the provider's or the tool's words)."""
    while err.__cause__ is not None:
        err = err.__cause__
    return str(err)


class WakeCycle:
    """Runs one wake; its ``budget`` and ``status`` are readable while it runs (queries)."""

    def __init__(
        self,
        rt: AgentRuntime,
        wake: WakeRef,
        goal: Goal,
        idempotency_key: str,
        *,
        annotations: LedgerAnnotations | None = None,
        ttls: CacheTtls | None = None,
        first_ttls: CacheTtls | None = None,
        stop: Callable[[], bool] = lambda: False,
        on_call: OnCall | None = None,
        delegate: Delegate | None = None,
        approvals: Approvals | None = None,
        ceiling: SpendCeiling | None = None,
    ) -> None:
        self.rt, self.wake, self.goal, self.key = rt, wake, goal, idempotency_key
        self.annotations = annotations
        self.ttls = ttls
        # The first call's TTLs when they differ (it may write no session entry).
        self.first_ttls = first_ttls
        self.stop, self.on_call, self.delegate = stop, on_call, delegate
        self.approvals = approvals  # None: calls needing approval are denied (child agents)
        self.parked_by: str | None = None  # set when an approval timeout parks the wake
        self.budget = WakeBudget(
            max_model_calls=rt.max_model_calls_per_wake,
            max_tool_calls=rt.max_tool_calls_per_wake,
            max_tokens=rt.max_tokens_per_wake,
        )
        self.totals = CallModelOut(output_hash="", stop_reason="")
        self.status = "running"
        self.error = ""
        self.merged = False
        self.opening: StartWakeIn | None = None  # the wake, until a compile has opened it
        self.closed: FinishWakeOut | None = None  # set when call_model closed the wake
        self.answer: WakeAnswer | None = None  # the final reply's, or the output tool's
        self.children_usd = 0.0  # what the children this wake delegated to spent
        # A child's: what it may spend of its parent's caps in this wake (None: no cap).
        self.ceiling = ceiling
        self.compiled: CompileOut | None = None  # the latest compile (its day's spend)
        self.reminder: str | None = None  # recorded by the next compile (TYPED_ANSWER)
        # call_model needs the provider and model, not the tool limits: sent without them,
        # the runtime does not repeat them in every model call's history event.
        self.model_rt = rt.model_copy(update={"tools": ()})

    async def run(self) -> FinishWakeOut:
        # The wake's root span is the current one while it runs, so Temporal's spans of its
        # activities and child workflows hang under its ``invoke_agent`` (no I/O: a context
        # derived from the workflow's trace context and the wake id; see wake_trace).
        with wake_scope(self.wake.tenant, self.wake.wake_id):
            return await self._run()

    async def _run(self) -> FinishWakeOut:
        wake = self.wake
        self.merged = workflow.patched(FEWER_STEPS)
        opening: StartWakeIn | None = StartWakeIn(
            wake=wake, goal=self.goal, idempotency_key=self.key, started_at=workflow.now()
        )
        if not self.merged:
            await store(START_WAKE, opening, StartWakeOut)
            opening = None
        self.opening, self.closed = opening, None
        self.status = await self._loop()
        if self.closed is not None:
            return self.closed
        if self.opening is not None:  # stopped (or parked) before a compile opened it
            await store(START_WAKE, self.opening, StartWakeOut)
        return await store(
            FINISH_WAKE,
            FinishWakeIn(
                wake=wake,
                goal=self.goal,
                status=self.status,
                at=workflow.now(),
                model_calls=self.budget.model_calls,
                tool_calls=self.budget.tool_calls,
                error=self.error,
            ),
            FinishWakeOut,
        )

    async def _loop(self) -> str:
        rt, wake, b = self.rt, self.wake, self.budget
        # Asked only for an agent with output_type: histories of others need no marker.
        typed = rt.output_tool is not None and workflow.patched(TYPED_ANSWER)
        text_replies = 0
        for index in range(rt.max_model_calls_per_wake):
            if self.stop():
                return "stopped"
            try:
                compiled = await store(
                    COMPILE,
                    CompileIn(
                        wake=wake,
                        runtime=rt,
                        goal=self.goal,
                        call_index=index,
                        now=workflow.now(),
                        annotations=self.annotations if index == 0 else None,
                        open=self.opening,
                        ttls=self.first_ttls if index == 0 and self.first_ttls else self.ttls,
                        reminder=self.reminder,
                    ),
                    CompileOut,
                    start_to_close=p.COMPILE_TIMEOUT,
                )
                self.opening = self.reminder = None
                self.compiled = compiled
                # Only histories with such a call (none before it existed) ask for the marker.
                if compiled.intents_cost_usd and workflow.patched(INTENT_SPEND):
                    cost = self.totals.cost_usd + compiled.intents_cost_usd
                    self.totals = self.totals.model_copy(update={"cost_usd": cost})
            except ACTIVITY_FAILURES as err:
                # Only deterministic failures get here (see policies.DETERMINISTIC_ERRORS):
                # park the wake with its error; the agent goes on serving later triggers.
                self.error = failure(err)
                return "parked"
            why = self._spend_cap(compiled)
            if why is not None:
                self.error = why
                return "budget"
            if self._over_budget(compiled):
                return "token_budget"
            started = workflow.now()
            merged = self.merged
            try:
                reply = await self._call_model(
                    CallModelIn(
                        wake=wake,
                        provider=self.model_rt.provider,
                        call_index=index,
                        window_hash=compiled.window_hash,
                        at=started if merged else None,
                        record=merged,
                        # A typed answer comes through a tool: a text reply closes no wake.
                        finish=merged and not typed,
                        tool_calls=b.tool_calls,
                    )
                )
            except ACTIVITY_FAILURES as err:
                self.error = failure(err)
                return "model_error"
            b.model_calls += 1
            self.totals = add_usage(self.totals, reply)
            b.input_tokens = (
                self.totals.input_tokens
                + self.totals.cache_read_input_tokens
                + self.totals.cache_creation_input_tokens
            )
            if self.on_call is not None:
                self.on_call(compiled, reply, started)
            if not merged:
                await store(
                    RECORD_OUTPUT,
                    RecordOutputIn(
                        wake=wake,
                        call_index=index,
                        output_hash=reply.output_hash,
                        at=workflow.now(),
                    ),
                    RecordOutputOut,
                )
            if not reply.tool_calls and typed:
                if text_replies == TEXT_REPLIES_ASKED_AGAIN:
                    self.error = (
                        f"the model replied in text {text_replies + 1} times; an agent with"
                        f" output_type answers by calling {rt.output_tool}"
                    )
                    return "no_answer"
                text_replies += 1
                self.reminder = (
                    f"Your reply is not an answer: answer by calling the {rt.output_tool}"
                    " tool, with the answer as its arguments."
                )
                continue
            if not reply.tool_calls:
                # the wake's answer (a capped copy; see WakeResult)
                self.answer = WakeAnswer(reply.answer, reply.answer_chars, reply.output_hash)
                if merged:  # call_model closed the wake
                    self.closed = FinishWakeOut(handoff_id=reply.handoff_id)
                return "done"
            await self._tools(index, reply)
            if self.answer is not None:  # the output tool took a valid answer: done
                return "done"
            if self.parked_by is not None:
                self.error = self.parked_by
                return "parked"
            if self.stop():
                return "stopped"
            if b.tool_calls >= rt.max_tool_calls_per_wake:
                return "tool_budget"
            why = self._spend_cap(None)  # the wake's own cap, without compiling again
            if why is not None:
                self.error = why
                return "budget"
            if b.input_tokens >= rt.max_tokens_per_wake:
                return "token_budget"
        return "call_budget"

    async def _call_model(self, arg: CallModelIn) -> CallModelOut:
        """An activity; a local activity for agents that ask for it (``local_model_calls``,
        part of the workflow's input, so a history replays the way it ran)."""
        if self.rt.local_model_calls:
            reply: CallModelOut = await workflow.execute_local_activity(
                CALL_MODEL,
                arg,
                result_type=CallModelOut,
                start_to_close_timeout=p.MODEL_TIMEOUT,
                retry_policy=p.MODEL_RETRY,
                summary=f"model call {arg.call_index}",
            )
            return reply
        return await act(
            CALL_MODEL,
            arg,
            CallModelOut,
            start_to_close=p.MODEL_TIMEOUT,
            retry=p.MODEL_RETRY,
            heartbeat=p.MODEL_HEARTBEAT,
            summary=f"model call {arg.call_index}",
        )

    def _spend_cap(self, compiled: CompileOut | None) -> str | None:
        """Why the next model call may not be sent: a spend cap reached (None: none is).
        The day's spend comes with the ``compiled`` window (without it, only the wake's own
        cap is checked). The wake's spend includes its children's: a delegation is spent
        on the wake's behalf. Only agents with a cap can get a reason, so histories of runs
        without caps replay unchanged."""
        children = self.children_usd
        if children and not workflow.patched(CHILD_SPEND):
            children = 0.0
        if self.ceiling is not None:
            why = ceiling_cap(
                self.ceiling,
                usd=self.totals.cost_usd + children,
                tokens=self.budget.input_tokens + self.totals.output_tokens,
            )
            if why is not None:
                return why
        return spend_cap(
            self.rt,
            wake_usd=self.totals.cost_usd + children,
            today_usd=None if compiled is None else compiled.spent_today_usd,
            today_tokens=None if compiled is None else compiled.spent_today_tokens,
            now=workflow.now(),
        )

    def _left_for_children(self, reply: CallModelOut) -> SpendCeiling | None:
        """What this wake may still spend on children: its caps less what the wake and the
        day have spent, the ``reply`` asking for them included (None: no cap). The day's
        spend is the latest compile's reading plus that reply: nothing else of this wake
        was recorded since. The patch is asked only when a capped agent delegates, so the
        histories of other runs replay without its marker."""
        if not has_cap(self.rt) or not workflow.patched(CHILD_CEILING):
            return None
        day = self.compiled
        tokens = (
            reply.input_tokens
            + reply.output_tokens
            + reply.cache_creation_input_tokens
            + reply.cache_read_input_tokens
        )
        return spend_left(
            self.rt,
            wake_usd=self.totals.cost_usd + self.children_usd,
            today_usd=(
                None
                if day is None or day.spent_today_usd is None
                else day.spent_today_usd + reply.cost_usd
            ),
            today_tokens=(
                None
                if day is None or day.spent_today_tokens is None
                else day.spent_today_tokens + tokens
            ),
        )

    def _over_budget(self, compiled: CompileOut) -> bool:
        """Whether sending the window would overspend the wake's tokens. The check after a
        tool round sees only what was sent, so without this a wake (a child under its
        ceiling) overshoots by one window. The patch is asked only when this would stop the
        wake, so a history that never reached it replays without the marker."""
        left = self.rt.max_tokens_per_wake - self.budget.input_tokens
        return compiled.input_tokens > left and workflow.patched(TOKEN_PRECHECK)

    async def _tools(self, index: int, reply: CallModelOut) -> None:
        failed: list[ToolResultIn] = []
        delegated = [c for c in reply.tool_calls if c.name == DELEGATE_TOOL]
        own = [c for c in reply.tool_calls if c.name != DELEGATE_TOOL]
        self._request_approvals(reply, own)
        for call in own:
            if self.stop():
                self._drop_approval(call)
                failed.append(_result(call, "not run: the agent was asked to stop"))
                continue
            if self.parked_by is not None:
                self._drop_approval(call)
                failed.append(_result(call, f"not run: the wake was parked ({self.parked_by})"))
                continue
            limits = self.rt.limits(call.name)
            approved_by: str | None = None
            if limits is not None and limits.approval is not None:
                verdict = await self._approval(call, limits.approval)
                if isinstance(verdict, ApprovalDecision):
                    approved_by = verdict.by
                else:
                    failed.append(_result(call, verdict))
                    if self.parked_by is None:  # a denied call was still a call
                        self.budget.tool_calls += 1
                    continue
            arg = RunToolIn(
                wake=self.wake,
                call_index=index,
                output_hash=reply.output_hash,
                tool_call=call,
                at=workflow.now(),
                approved_by=approved_by,
            )
            try:
                out = await self._run_tool(call, arg, limits)
                if call.name == self.rt.output_tool and not out.is_error:
                    self.answer = WakeAnswer(out.answer, out.answer_chars, out.result_hash)
            except ACTIVITY_FAILURES as err:
                # The tool's own failure (the store's and the worker's never get here in
                # runs that count attempts), in words fit for the model: no host paths.
                why = model_text(failure(err))
                failed.append(_result(call, f"{call.name} failed for good: {why}"))
            self.budget.tool_calls += 1
        if delegated:
            if self.parked_by is not None:
                failed += [
                    _result(c, f"not run: the wake was parked ({self.parked_by})")
                    for c in delegated
                ]
            elif self.delegate is None or self.stop():
                why = "delegation is not available here" if self.delegate is None else "stopped"
                failed += [_result(c, f"not run: {why}") for c in delegated]
            else:
                self.children_usd += await self.delegate(
                    self.wake, index, reply, delegated, self._left_for_children(reply)
                )
            if self.parked_by is None:
                self.budget.tool_calls += len(delegated)
        if failed:
            await store(
                RECORD_TOOL_RESULTS,
                RecordToolResultsIn(
                    wake=self.wake, call_index=index, results=tuple(failed), at=workflow.now()
                ),
                RecordToolResultsOut,
            )

    async def _run_tool(
        self, call: ToolCallRef, arg: RunToolIn, limits: ToolLimits | None
    ) -> RunToolOut:
        """Run one tool call; raise its failure once the tool has failed ``max_attempts``
        times. Runs with the ``TOOL_ATTEMPTS`` marker count only the tool's own failures:
        Temporal retries the store's and the worker's without limit (``TOOL_INFRA_RETRY``),
        the activity raises the tool's own non-retryable, and they are retried here. Runs
        without it let Temporal count every failed attempt, as they did."""
        max_attempts = limits.max_attempts if limits else 3
        if not workflow.patched(TOOL_ATTEMPTS):
            return await self._tool_activity(call, arg, limits, p.tool_retry(max_attempts))
        attempt = 1
        while True:
            try:
                counted = arg.model_copy(update={"tool_attempt": attempt})
                return await self._tool_activity(call, counted, limits, p.TOOL_INFRA_RETRY)
            except ACTIVITY_FAILURES as err:
                if attempt >= max_attempts or _failure_type(err) in p.DETERMINISTIC_ERRORS:
                    raise
                await workflow.sleep(p.tool_backoff(attempt))
                attempt += 1

    async def _tool_activity(
        self, call: ToolCallRef, arg: RunToolIn, limits: ToolLimits | None, retry: RetryPolicy
    ) -> RunToolOut:
        timeout = timedelta(seconds=limits.timeout_s if limits else 60)
        # The patch is asked only for a local tool, so histories of runs that never had one
        # replay without its marker.
        if limits is not None and limits.local and workflow.patched(LOCAL_TOOLS):
            local: RunToolOut = await workflow.execute_local_activity(
                RUN_TOOL,
                arg,
                result_type=RunToolOut,
                start_to_close_timeout=timeout,
                retry_policy=retry,
            )
            return local
        return await act(
            RUN_TOOL,
            arg,
            RunToolOut,
            start_to_close=timeout,
            retry=retry,
            heartbeat=(
                timedelta(seconds=limits.heartbeat_s) if limits and limits.heartbeat_s else None
            ),
            # Remote steps only: a local tool's marker would grow every wake's history by
            # the summary (``bench history``).
            summary=f"tool {call.name}",
        )

    # --- approvals ------------------------------------------------------------------------

    def _request_approvals(self, reply: CallModelOut, calls: list[ToolCallRef]) -> None:
        """List every call of the reply that needs a decision at once, so a person sees
        (and may decide) them all while the first one is waited for."""
        if self.approvals is None:
            return
        now = workflow.now()
        for call in calls:
            limits = next((t for t in self.rt.tools if t.name == call.name), None)
            if limits is None or limits.approval is None:
                continue
            policy = limits.approval
            self.approvals.request(
                PendingApproval(
                    call_id=call.id,
                    tool=call.name,
                    wake_id=self.wake.wake_id,
                    reply_hash=reply.output_hash,
                    requested_at=now,
                    deadline=(
                        None
                        if policy.timeout_s is None
                        else now + timedelta(seconds=policy.timeout_s)
                    ),
                    on_timeout=policy.on_timeout,
                )
            )

    def _drop_approval(self, call: ToolCallRef) -> None:
        if self.approvals is not None:
            self.approvals.drop(call.id)

    async def _approval(self, call: ToolCallRef, policy: ApprovalPolicy) -> str | ApprovalDecision:
        """Wait for a person's decision on ``call``: the approving decision, else the text
        the model reads as the tool's result (a denial, a timeout, a stop). A timeout under
        the ``park`` policy sets ``parked_by``. The wait is a durable condition (a timer
        when the policy has a timeout): no worker holds anything while it lasts."""
        gate = self.approvals
        if gate is None:
            return f"not run: {call.name} needs a person's approval, which is not available here"
        item = gate.pending.get(call.id)
        deadline = item.deadline if item is not None else None
        timeout = None if deadline is None else max(deadline - workflow.now(), timedelta(0))
        try:
            await workflow.wait_condition(
                lambda: call.id in gate.decided or self.stop(), timeout=timeout
            )
        except TimeoutError:
            pass
        decision = gate.take(call.id)
        if decision is not None:
            return decision if decision.approved else denial_text(decision)
        gate.drop(call.id)
        if self.stop():
            return "not run: the agent was asked to stop"
        assert policy.timeout_s is not None  # only a timed wait ends undecided otherwise
        why = timeout_text(timedelta(seconds=policy.timeout_s))
        if policy.on_timeout == "park":
            self.parked_by = f"the approval of {call.name} call {call.id}: {why}"
            return f"not run: the wake was parked ({self.parked_by})"
        return f"denied by the approval timeout: {why}"


class WakeAnswer(NamedTuple):
    """The wake's answer: a capped copy of its text, its whole length, the stored blob."""

    text: str
    chars: int
    ref: str


def _failure_type(err: BaseException) -> str:
    """The type Temporal gives the innermost application failure of ``err`` ('' if none)."""
    at: BaseException | None = err
    found = ""
    while at is not None:
        if isinstance(at, ApplicationError):
            found = at.type or ""
        at = at.__cause__
    return found


def _result(call: ToolCallRef, text: str) -> ToolResultIn:
    return ToolResultIn(tool_call_id=call.id, tool_name=call.name, text=text, is_error=True)


def add_usage(a: CallModelOut, b: CallModelOut) -> CallModelOut:
    return CallModelOut(
        output_hash=b.output_hash,
        stop_reason=b.stop_reason,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_creation_input_tokens=a.cache_creation_input_tokens + b.cache_creation_input_tokens,
        cache_read_input_tokens=a.cache_read_input_tokens + b.cache_read_input_tokens,
        cost_usd=a.cost_usd + b.cost_usd,
    )
