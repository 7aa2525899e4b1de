"""``ConsolidationWorkflow``: one consolidation round for one agent.

Started by the agent's schedule (see :mod:`wakeful.consolidation.schedule`), on demand
(``wakeful consolidate AGENT``), or when a compile reported budget pressure
(``only_if_pressured``). One round runs, in this order::

    [pressure?] -> plan turn spans -> capture (promote to registry + memories)
                -> summarise spans (model, in parallel) -> gate + commit each
                -> hygiene (deltas, superseded marks, staleness, decay) -> dream (merge)
                -> session rollups -> period rollups

Capture runs before any commit, and each commit re-checks that its span's promotions are in
the registry, so no raw span is retired before its load-bearing content is safe.

The sequence lives in :func:`consolidation_round`, written against a small :class:`Caller`
so that the same code runs as this workflow (activities through Temporal) and in-process
(the benchmark calls the activities directly). It only awaits its caller: no I/O, no clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from wakeful.consolidation.contracts import (
        CAPTURE,
        COMMIT,
        DREAM,
        HYGIENE,
        PLAN,
        PRESSURE,
        SUMMARISE,
        AgentIn,
        CaptureOut,
        CommitIn,
        CommitOut,
        ConsolidationInput,
        ConsolidationResult,
        DraftOut,
        DreamOut,
        HygieneOut,
        PlanIn,
        PlanOut,
        PressureOut,
        SpanIn,
    )
    from wakeful.consolidation.spans import Span

T = TypeVar("T", bound=BaseModel)

_STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)
)
_MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=2),
    maximum_attempts=8,
)


class Caller(Protocol):
    """Runs one activity by name: ``model=True`` marks the slow, model-calling one."""

    def __call__(
        self, name: str, arg: BaseModel, result_type: type[T], *, model: bool = False
    ) -> Awaitable[T]: ...


def consolidation_workflow_id(tenant: str, agent: str) -> str:
    """The on-demand consolidation of an agent (schedules append their fire time)."""
    return f"wakeful-consolidate:{tenant}:{agent}"


async def _spans(
    call: Caller, a: AgentIn, inp: ConsolidationInput, spans: tuple[Span, ...]
) -> list[CommitOut]:
    rt = inp.runtime
    model = inp.policy.summary_model or rt.model
    drafts = await asyncio.gather(
        *(
            call(
                SUMMARISE,
                SpanIn(agent=a, span=s, provider=rt.provider, model=model),
                DraftOut,
                model=True,
            )
            for s in spans
        )
    )
    # Commits run in span order: each locks only its own rows, but the log reads in order.
    return [
        await call(COMMIT, CommitIn(agent=a, span=s, output_hash=d.output_hash), CommitOut)
        for s, d in zip(spans, drafts, strict=True)
    ]


async def consolidation_round(
    call: Caller, inp: ConsolidationInput, *, now: datetime, round_id: str
) -> ConsolidationResult:
    """One consolidation round; deterministic given the activities' answers."""
    rt = inp.runtime
    a = AgentIn(tenant=rt.tenant, agent=rt.name, now=now, round_id=round_id, policy=inp.policy)
    if inp.only_if_pressured:
        pressure = await call(PRESSURE, a, PressureOut)
        if not pressure.pressured:
            return ConsolidationResult(
                agent=rt.name, reason=inp.reason, skipped="no budget pressure in the latest compile"
            )
    plan = await call(PLAN, PlanIn(agent=a, level=1), PlanOut)
    captured = await call(CAPTURE, a, CaptureOut)
    commits = await _spans(call, a, inp, plan.spans)
    hygiene = await call(HYGIENE, a, HygieneOut)
    dream = await call(DREAM, a, DreamOut)
    rollups: list[CommitOut] = []
    for level in (2, 3):
        ups = await call(PLAN, PlanIn(agent=a, level=level), PlanOut)
        rollups += await _spans(call, a, inp, ups.spans)
    done = [*commits, *rollups]
    return ConsolidationResult(
        agent=rt.name,
        reason=inp.reason,
        spans=len(plan.spans),
        accepted=sum(c.status in ("accepted", "exists") for c in commits),
        rejected=sum(c.status == "rejected" for c in done),
        raced=sum(c.status == "raced" for c in done),
        rollups=sum(c.status in ("accepted", "exists") for c in rollups),
        promoted=len(captured.promoted),
        revoked=len(captured.revoked),
        facts=captured.facts,
        rejections=tuple(r for c in done for r in c.reasons),
        hygiene=hygiene,
        dream=dream,
    )


async def _activity(name: str, arg: BaseModel, result_type: type[T], *, model: bool = False) -> T:
    result: T = await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=timedelta(minutes=5) if model else timedelta(minutes=2),
        retry_policy=_MODEL_RETRY if model else _STORE_RETRY,
    )
    return result


@workflow.defn(name="ConsolidationWorkflow")
class ConsolidationWorkflow:
    @workflow.run
    async def run(self, inp: ConsolidationInput) -> ConsolidationResult:
        info = workflow.info()
        return await consolidation_round(
            _activity, inp, now=workflow.now(), round_id=f"{info.workflow_id}/{info.run_id}"
        )


async def consolidate_on_pressure(inp: ConsolidationInput) -> bool:
    """From inside another workflow (e.g. after a wake): start a pressure-gated round.

    The child is abandoned, not awaited, so the caller's wake is never delayed; it does
    nothing unless the agent's latest compile evicted history for budget. Returns False
    when such a round is already running.
    """
    return await _start_pressure_round(
        inp.model_copy(update={"reason": "pressure", "only_if_pressured": True})
    )


# A wake whose window carried budget.consolidate_at tokens of history consolidates it at
# once: the round takes events of any age (the newest keep_recent_events and running wakes
# stay raw), since a long session never leaves any as old as the schedule waits for.
HISTORY_MIN_AGE = timedelta(0)


async def consolidate_history(inp: ConsolidationInput) -> bool:
    """From the agent workflow after a wake whose window's history reached the compile
    policy's ``budget.consolidate_at``: start a round that may consolidate recent history.

    Abandoned, not awaited (the next wake is never delayed), under the pressure round's id:
    at most one runs per agent. Returns False when one is already running.
    """
    return await _start_pressure_round(
        inp.model_copy(
            update={
                "reason": "pressure",
                "only_if_pressured": False,
                "policy": inp.policy.model_copy(update={"min_age": HISTORY_MIN_AGE}),
            }
        )
    )


async def _start_pressure_round(round_in: ConsolidationInput) -> bool:
    """Start ``round_in`` as an abandoned child under the agent's pressure-round id."""
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.workflow import ParentClosePolicy

    rt = round_in.runtime
    try:
        await workflow.start_child_workflow(
            ConsolidationWorkflow.run,
            round_in,
            id=consolidation_workflow_id(rt.tenant, rt.name) + ":pressure",
            parent_close_policy=ParentClosePolicy.ABANDON,
        )
    except WorkflowAlreadyStartedError:
        return False
    return True
