"""Child agents: narrow sub-tasks run as child workflows, fanned out under a concurrency cap.

A parent's model asks for sub-tasks with the ``delegate`` tool (one call per sub-task; several
calls in one reply run in parallel). The workflow — not ``run_tool`` — handles those calls:

    child.plan     (activity) delegate arguments -> one ChildBundle per call, or a refusal
    ChildAgentWorkflow x N, at most ``max_parallel`` at once, each with its own timeout
    child.merge    (activity) valid results -> evidence cards (memories) + tool results

A child is its own agent, ``<parent>/child/<n>``: its frame, its allowlisted tools, its own
(empty) substrate. It never sees the parent's transcript or retrieval hits. It runs ordinary
wake cycles; after each, ``child.collect`` validates the answer against the delegation's
pydantic model and its size cap. An invalid answer is retried (the child is told why) or
reported, per the delegation's ``on_invalid``; either way the parent gets the reason.

A child spends on its parent's behalf. When the parent has a spend cap, its delegations
run one child at a time, each under a ceiling of what the parent has left (its caps less
what its wake, its day and the children before spent), which the child's wake cycles
check before every model call; a delegation whose turn comes with nothing left is not run
(``not_run``, with the reason). See ``wakeful.workflows.spend``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from wakeful.compiler.blocks import Goal, GoalKind
    from wakeful.contracts import (
        CHILD_COLLECT,
        CHILD_MERGE,
        CHILD_PLAN,
        CHILD_PREPARE,
        RECORD_TOOL_RESULTS,
        CallModelOut,
        ChildBundle,
        ChildCollectIn,
        ChildCollectOut,
        ChildMergeIn,
        ChildMergeOut,
        ChildPlanIn,
        ChildPlanOut,
        ChildPrepareIn,
        ChildPrepareOut,
        ChildResult,
        RecordToolResultsIn,
        RecordToolResultsOut,
        SpendCeiling,
        ToolCallRef,
        WakeRef,
    )
    from wakeful.wake_trace import tool_scope
    from wakeful.workflows.cycle import WakeCycle, failure, store
    from wakeful.workflows.spend import ceiling_spent
    from wakeful.workflows.state import child_workflow_id

__all__ = [
    "ChildAgentWorkflow",
    "delegate_calls",
    "fan_out",
    "run_child",
    "unreported",
    "within_caps",
]


def child_ask(bundle: ChildBundle, rejected: str) -> str:
    if not rejected:
        return bundle.task
    return (
        f"Your previous answer was rejected: {rejected}\n"
        "Answer again with only one JSON object that matches the schema.\n\n"
        f"Task: {bundle.task}"
    )


@workflow.defn(name="ChildAgentWorkflow")
class ChildAgentWorkflow:
    def __init__(self) -> None:
        self.cycle: WakeCycle | None = None

    @workflow.run
    async def run(self, bundle: ChildBundle) -> ChildResult:
        prepared = await store(CHILD_PREPARE, ChildPrepareIn(bundle=bundle), ChildPrepareOut)
        rt = prepared.runtime
        reason, attempt, spent, cost, read, out = "", 0, 0, 0.0, 0, 0
        for attempt in range(1, bundle.max_attempts + 1):
            left = bundle.max_tokens - spent
            if left <= 0:
                reason += f" (token ceiling {bundle.max_tokens} reached)"
                break
            wake = WakeRef(
                tenant=bundle.tenant,
                agent=bundle.child,
                wake_id=f"{bundle.child}:{attempt}",
                session_id=f"{bundle.child}:s0001",
                workflow_id=workflow.info().workflow_id,
                number=attempt,
                user=bundle.user,  # in the activities' inputs only: no command changes
            )
            goal = Goal(kind=GoalKind.CHILD_TASK, text=child_ask(bundle, reason))
            self.cycle = WakeCycle(
                rt.model_copy(update={"max_tokens_per_wake": left}),
                wake,
                goal,
                idempotency_key=f"{bundle.call_id}:{attempt}",
                # What the parent had left when the child started, less earlier attempts.
                ceiling=None if bundle.ceiling is None else bundle.ceiling.less(cost, spent + out),
            )
            await self.cycle.run()
            spent += self.cycle.budget.input_tokens
            cost += self.cycle.totals.cost_usd
            read += self.cycle.totals.cache_read_input_tokens
            out += self.cycle.totals.output_tokens
            got = await store(
                CHILD_COLLECT, ChildCollectIn(bundle=bundle, wake_id=wake.wake_id), ChildCollectOut
            )
            spend = (spent, read, cost, out)
            if got.ok:
                return self._result(bundle, "ok", "", attempt, spend, got)
            reason = got.reason
            if self.cycle.status == "budget" and bundle.ceiling is not None:
                # What the parent had left is spent: no retry can help.
                reason += f" ({self.cycle.error})"
                break
            if self.cycle.status == "token_budget":
                # The ceiling held the wake back; a retry's window (same session) is no smaller.
                reason += f" (token ceiling {bundle.max_tokens} reached)"
                break
            if bundle.on_invalid != "retry":
                break
        spend = (spent, read, cost, out)
        return self._result(bundle, "rejected", reason, attempt, spend, None)

    @staticmethod
    def _result(
        b: ChildBundle,
        status: str,
        reason: str,
        attempts: int,
        spend: tuple[int, int, float, int],
        got: ChildCollectOut | None,
    ) -> ChildResult:
        """``spend``: (input tokens of every kind, those read from cache, USD, output)."""
        spent, read, cost, out = spend
        return ChildResult.model_validate(
            {
                "child": b.child,
                "call_id": b.call_id,
                "kind": b.kind,
                "status": status,
                "reason": reason,
                "result_hash": got.result_hash if got else "",
                "chars": got.chars if got else 0,
                "attempts": attempts,
                "input_tokens": spent,
                "cache_read_input_tokens": read,
                "cost_usd": cost,
                "output_tokens": out,
            }
        )


# Of a child workflow's static summary in the Temporal UI's list. A summary is stored in
# the parent's history (and the child's); no static details are added: what they would
# say (parent, call id, limits) is in the child's input already, and each one costs the
# parent's history its bytes again.
SUMMARY_CHARS = 100


def child_summary(b: ChildBundle) -> str:
    """A child workflow's one-line summary in the Temporal UI: who does what for whom."""
    task = " ".join(b.task.split())
    head = f"delegate to {b.child} ({b.kind}): "
    room = max(SUMMARY_CHARS - len(head), 10)
    return head + (task if len(task) <= room else task[: room - 1].rstrip() + "…")


async def run_child(b: ChildBundle, wake_id: str) -> ChildResult:
    """Run one child workflow to its result (a timeout or a failure is a result too);
    ``wake_id`` is the delegating wake's (the child runs under its call's span)."""
    try:
        # Under the delegate call's execute_tool span (written at the merge), so the child
        # workflow and its wakes are beneath it in the trace.
        with tool_scope(b.tenant, wake_id, b.call_id):
            return await workflow.execute_child_workflow(
                ChildAgentWorkflow.run,
                b,
                id=child_workflow_id(b.tenant, b.child),
                execution_timeout=timedelta(seconds=b.timeout_s),
                static_summary=child_summary(b),
            )
    except ChildWorkflowError as err:
        timed_out = isinstance(err.cause, TimeoutError)
        why = f"no result within {b.timeout_s:g}s" if timed_out else failure(err)
        return ChildResult(
            child=b.child,
            call_id=b.call_id,
            kind=b.kind,
            status="timed_out" if timed_out else "failed",
            reason=why,
        )


async def fan_out(
    bundles: tuple[ChildBundle, ...], max_parallel: int, wake_id: str
) -> list[ChildResult]:
    """Run one child workflow per bundle, at most ``max_parallel`` at a time, in call order;
    ``wake_id`` is the delegating wake's (the child runs under its call's span)."""
    gate = asyncio.Semaphore(max(1, max_parallel))

    async def one(b: ChildBundle) -> ChildResult:
        async with gate:
            return await run_child(b, wake_id)

    return list(await asyncio.gather(*(one(b) for b in bundles)))


async def within_caps(
    bundles: tuple[ChildBundle, ...], left: SpendCeiling, wake_id: str
) -> tuple[list[ChildResult], float]:
    """Run the children one at a time, in call order, each under what ``left`` still holds
    once the children before it have spent; a child whose turn finds nothing left is not
    run. One at a time, every model call of theirs is checked against what is really left
    when it is sent, so at most one of them crosses the parent's cap (and none after).

    Returns the results and the dollars the parent's wake must count as spent on them:
    what they cost, except that a child which failed or timed out reports nothing, yet may
    have spent all it was given, so it counts as having done so and no child after it is
    run. (The day's caps read what was recorded, ``spend_since``, at the next compile.)"""
    results: list[ChildResult] = []
    charged = 0.0
    unknown: ChildResult | None = None  # the child that ended without reporting its spend
    for b in bundles:
        why = ceiling_spent(left) if unknown is None else unreported(unknown, left)
        if why is not None:
            results.append(
                ChildResult(
                    child=b.child, call_id=b.call_id, kind=b.kind, status="not_run", reason=why
                )
            )
            continue
        r = await run_child(b.model_copy(update={"ceiling": left}), wake_id)
        results.append(r)
        if r.status in ("failed", "timed_out"):
            unknown = r
            charged += max(left.usd or 0.0, 0.0)
        else:
            left = left.less(r.cost_usd, r.input_tokens + r.output_tokens)
            charged += r.cost_usd
    return results, charged


def unreported(r: ChildResult, left: SpendCeiling) -> str:
    """Why no delegation runs after the child ``r``, which ended without its spend."""
    caps = " and ".join(
        c
        for c, capped in (
            (left.usd_cap, left.usd is not None),
            ("max_tokens_per_day", left.tokens is not None),
        )
        if capped
    )
    return (
        f"spend cap: child {r.child} ended {r.status} without reporting what it spent of"
        f" the agent's {caps or 'spend caps'}; the child was not started"
    )


async def delegate_calls(
    wake: WakeRef,
    index: int,
    reply: CallModelOut,
    calls: list[ToolCallRef],
    first_child: int,
    left: SpendCeiling | None = None,
) -> tuple[int, list[ChildResult], float]:
    """Handle a reply's ``delegate`` calls, within ``left`` of the parent's spend caps
    (None: not capped); returns (children planned, their results, the dollars the wake
    counts as spent on them: see ``within_caps``)."""
    plan = await store(
        CHILD_PLAN,
        ChildPlanIn(
            wake=wake,
            call_index=index,
            output_hash=reply.output_hash,
            call_ids=tuple(c.id for c in calls),
            first_child=first_child,
        ),
        ChildPlanOut,
    )
    if plan.rejected:
        await store(
            RECORD_TOOL_RESULTS,
            RecordToolResultsIn(
                wake=wake, call_index=index, results=plan.rejected, at=workflow.now()
            ),
            RecordToolResultsOut,
        )
    if left is None:
        results = await fan_out(plan.bundles, plan.max_parallel, wake.wake_id)
        charged = sum(r.cost_usd for r in results)
    else:
        results, charged = await within_caps(plan.bundles, left, wake.wake_id)
    if results:
        await store(
            CHILD_MERGE,
            ChildMergeIn(wake=wake, call_index=index, results=tuple(results), at=workflow.now()),
            ChildMergeOut,
        )
    return len(plan.bundles), results, charged
