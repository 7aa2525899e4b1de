"""The per-agent consolidation schedules, through Temporal's Schedule API.

This is the one module of :mod:`wakeful.consolidation` that talks to a server (a Temporal
client); everything else in the package is pure.

Two schedules per agent, both starting
:class:`~wakeful.workflows.consolidation.ConsolidationWorkflow`:

* ``wakeful-consolidate:<tenant>:<agent>`` every ``every`` (default a day): a full round;
* ``wakeful-consolidate:<tenant>:<agent>:pressure`` every ``pressure_every`` (default an
  hour, ``None`` for none): a round that does nothing unless the agent's latest compile had
  to evict history for its budget.

Overlapping runs are skipped (a round still running makes the next tick a no-op) and missed
ticks are not replayed beyond one interval. :func:`ensure_consolidation_schedules` is
idempotent: an existing schedule is updated to the new definition.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

from wakeful.agents import AgentRuntime
from wakeful.consolidation.contracts import ConsolidationInput
from wakeful.consolidation.policy import ConsolidationPolicy, consolidation_policy
from wakeful.errors import ConfigError
from wakeful.workflows.consolidation import ConsolidationWorkflow, consolidation_workflow_id


def consolidation_schedule_id(tenant: str, agent: str, *, pressure: bool = False) -> str:
    return consolidation_workflow_id(tenant, agent) + (":pressure" if pressure else "")


def consolidation_schedule(
    runtime: AgentRuntime,
    task_queue: str,
    *,
    every: timedelta,
    policy: ConsolidationPolicy | None = None,
    pressure: bool = False,
) -> Schedule:
    """The schedule definition: an interval spec whose action starts one round."""
    if every < timedelta(minutes=1):
        raise ConfigError(f"consolidation interval {every} is too short; use at least 1 minute")
    inp = ConsolidationInput(
        runtime=runtime,
        policy=policy or consolidation_policy(runtime),
        reason="pressure" if pressure else "schedule",
        only_if_pressured=pressure,
    )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            ConsolidationWorkflow.run,
            inp,
            id=consolidation_schedule_id(runtime.tenant, runtime.name, pressure=pressure),
            task_queue=task_queue,
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=every),
    )


async def _ensure(client: Client, sid: str, schedule: Schedule) -> ScheduleHandle:
    try:
        return await client.create_schedule(sid, schedule)
    except ScheduleAlreadyRunningError:
        handle = client.get_schedule_handle(sid)

        def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await handle.update(replace)
        return handle


async def ensure_consolidation_schedules(
    client: Client,
    runtime: AgentRuntime,
    task_queue: str,
    *,
    every: timedelta = timedelta(days=1),
    pressure_every: timedelta | None = timedelta(hours=1),
    policy: ConsolidationPolicy | None = None,
) -> list[ScheduleHandle]:
    """Create (or update) the agent's consolidation schedules; returns their handles."""
    handles = [
        await _ensure(
            client,
            consolidation_schedule_id(runtime.tenant, runtime.name),
            consolidation_schedule(runtime, task_queue, every=every, policy=policy),
        )
    ]
    pressure_sid = consolidation_schedule_id(runtime.tenant, runtime.name, pressure=True)
    if pressure_every is not None:
        schedule = consolidation_schedule(
            runtime, task_queue, every=pressure_every, policy=policy, pressure=True
        )
        handles.append(await _ensure(client, pressure_sid, schedule))
    return handles
