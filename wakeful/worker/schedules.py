"""Periodic wakes as Temporal Schedules: create, list, pause, unpause, trigger, backfill, delete.

Each fire starts a :class:`~wakeful.workflows.scheduled.ScheduledWakeWorkflow`, which delivers
a trigger keyed by the fire's *scheduled* time to the agent's workflow (signal-with-start).
Two policies are set deliberately:

* **overlap = SKIP.** A fire's workflow finishes within a second once a worker serves the
  queue; it is still running only while no worker is up. Skipping the fires that come due
  meanwhile leaves one delivery queued behind an outage instead of a pile: the agent compiles
  from the substrate as of its wake, so one catch-up wake covers what the missed ones would
  have seen. (A backfill passes its own overlap policy.)
* **catch-up window = 1 hour** (by default). If the Temporal server itself was down when a
  fire came due, fires missed by less than this still run once it is back — each at most
  once, because the agent deduplicates the scheduled-time key — and older ones are dropped:
  yesterday's "morning check" is not worth running at noon; the next fire does the work.

Schedule ids are ``wakeful:<tenant>:<agent>:<name>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleListActionStartWorkflow,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)

from wakeful.agents import AgentRuntime
from wakeful.errors import UserError
from wakeful.routing import routing
from wakeful.workflows.scheduled import ScheduledWakeInput, ScheduledWakeWorkflow

__all__ = [
    "DEFAULT_CATCHUP",
    "ScheduleSummary",
    "backfill_schedule",
    "create_schedule",
    "delete_schedule",
    "list_schedules",
    "pause_schedule",
    "schedule_id",
    "trigger_schedule",
    "unpause_schedule",
]

DEFAULT_CATCHUP = timedelta(hours=1)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class ScheduleSummary(BaseModel):
    id: str
    tenant: str
    agent: str
    name: str
    paused: bool
    note: str
    workflow: str
    next_fires: list[datetime]
    recent_fires: list[datetime]


def schedule_id(tenant: str, agent: str, name: str) -> str:
    if not _NAME.match(name):
        raise UserError(
            f"schedule name {name!r} must be 1-63 letters, digits, '_', '.' or '-',"
            " starting with a letter or digit"
        )
    return f"wakeful:{tenant}:{agent}:{name}"


async def create_schedule(
    client: Client,
    runtime: AgentRuntime,
    name: str,
    *,
    message: str,
    task_queue: str,
    every: timedelta | None = None,
    cron: str | None = None,
    catchup_window: timedelta = DEFAULT_CATCHUP,
    overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP,
    paused: bool = False,
    new_session: bool = False,
    note: str = "",
    intents: Sequence[str] = (),
    paths: Sequence[str] = (),
    task_class: str | None = None,
) -> ScheduleHandle:
    """Wake ``runtime``'s agent with ``message`` every ``every`` or on ``cron`` (UTC);
    ``intents``, ``paths`` and ``task_class`` are each wake's goal's, for the compile
    policy's triggers."""
    if (every is None) == (cron is None):
        raise UserError("give exactly one of every= (an interval) or cron= (a cron expression)")
    if every is not None and every < timedelta(minutes=1):
        raise UserError(f"every={every} is shorter than a minute; wakes are not a busy loop")
    if not message.strip():
        raise UserError("a scheduled wake needs a message saying what to do")
    route = routing(intents, paths, task_class)
    sid = schedule_id(runtime.tenant, runtime.name, name)
    action = ScheduleActionStartWorkflow(
        ScheduledWakeWorkflow.run,
        ScheduledWakeInput(
            runtime=runtime,
            schedule_id=sid,
            message=message,
            task_queue=task_queue,
            every=every,
            new_session=new_session,
            intents=route.intents,
            paths=route.paths,
            task_class=route.task_class,
        ),
        id=f"wakeful-scheduled:{runtime.tenant}:{runtime.name}:{name}",
        task_queue=task_queue,
    )
    spec = (
        ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)])
        if every is not None
        else ScheduleSpec(cron_expressions=[cron or ""])
    )
    return await client.create_schedule(
        sid,
        Schedule(
            action=action,
            spec=spec,
            policy=SchedulePolicy(overlap=overlap, catchup_window=catchup_window),
            state=ScheduleState(paused=paused, note=note or None),
        ),
    )


def _handle(client: Client, tenant: str, agent: str, name: str) -> ScheduleHandle:
    return client.get_schedule_handle(schedule_id(tenant, agent, name))


async def pause_schedule(
    client: Client, tenant: str, agent: str, name: str, note: str = ""
) -> None:
    await _handle(client, tenant, agent, name).pause(note=note or "paused by wakeful")


async def unpause_schedule(
    client: Client, tenant: str, agent: str, name: str, note: str = ""
) -> None:
    await _handle(client, tenant, agent, name).unpause(note=note or "unpaused by wakeful")


async def delete_schedule(client: Client, tenant: str, agent: str, name: str) -> None:
    await _handle(client, tenant, agent, name).delete()


async def trigger_schedule(client: Client, tenant: str, agent: str, name: str) -> None:
    """Fire once now (its key is the time of this fire, so it is a wake of its own)."""
    await _handle(client, tenant, agent, name).trigger(overlap=ScheduleOverlapPolicy.ALLOW_ALL)


async def backfill_schedule(
    client: Client, tenant: str, agent: str, name: str, start: datetime, end: datetime
) -> None:
    """Run the fires the spec had between ``start`` and ``end`` (each scheduled time once)."""
    if end <= start:
        raise UserError(f"backfill end {end} is not after its start {start}")
    await _handle(client, tenant, agent, name).backfill(
        ScheduleBackfill(start_at=start, end_at=end, overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    )


async def list_schedules(
    client: Client, *, tenant: str | None = None, agent: str | None = None
) -> list[ScheduleSummary]:
    """Wakeful's schedules (optionally of one tenant or agent), sorted by id."""
    out: list[ScheduleSummary] = []
    async for entry in await client.list_schedules():
        parts = entry.id.split(":", 3)
        if len(parts) != 4 or parts[0] != "wakeful":
            continue
        _, t, a, n = parts
        if (tenant is not None and t != tenant) or (agent is not None and a != agent):
            continue
        sched = entry.schedule
        action = sched.action if sched is not None else None
        out.append(
            ScheduleSummary(
                id=entry.id,
                tenant=t,
                agent=a,
                name=n,
                paused=bool(sched and sched.state.paused),
                note=(sched.state.note or "") if sched else "",
                workflow=(
                    action.workflow if isinstance(action, ScheduleListActionStartWorkflow) else ""
                ),
                next_fires=list(entry.info.next_action_times) if entry.info else [],
                recent_fires=(
                    [r.scheduled_at for r in entry.info.recent_actions] if entry.info else []
                ),
            )
        )
    return sorted(out, key=lambda s: s.id)
