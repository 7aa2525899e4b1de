"""Real Temporal Schedules on the dev server: a backfill over three days wakes the agent once
per scheduled time, backfilling the same days again (a catch-up re-fire) wakes no one, and
the server holds the deliberate policies (overlap SKIP, the catch-up window)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client, ScheduleOverlapPolicy
from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import settled, worker
from wakeful.agents import Agent
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker import schedules as sch
from wakeful.workflows.scheduled import schedule_key


async def _listed(client: Client, agent: Agent, want: int) -> list[sch.ScheduleSummary]:
    found: list[sch.ScheduleSummary] = []
    for _ in range(100):  # visibility is eventually consistent
        found = await sch.list_schedules(client, tenant=agent.tenant, agent=agent.name)
        if len(found) == want:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"expected {want} schedules, listed {found}")


async def _fired(client: Client, name: str, want: int) -> None:
    for _ in range(300):
        done = [
            w
            async for w in client.list_workflows(
                f"WorkflowType='ScheduledWakeWorkflow' AND TemporalScheduledById='{name}'"
                " AND ExecutionStatus='Completed'"
            )
        ]
        if len(done) >= want:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"schedule {name} did not complete {want} fires")


async def test_backfilled_days_wake_once_each_even_when_fired_twice(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client = temporal_dev.client
    ts = store.tenant(agent.tenant)
    async with worker(client, store, [agent], osim) as (queue, _):
        await sch.create_schedule(
            client,
            agent.runtime(),
            "morning",
            message="read_file README.md and say what is due.",
            task_queue=queue,
            every=timedelta(days=1),
            paused=True,
            note="created by a test",
        )
        (listed,) = await _listed(client, agent, 1)
        assert (listed.name, listed.paused, listed.workflow) == (
            "morning",
            True,
            "ScheduledWakeWorkflow",
        )
        sid = listed.id
        start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        start -= timedelta(days=3)
        end = start + timedelta(days=2, hours=12)  # fires at day 0, 1 and 2 (midnight UTC)
        await sch.backfill_schedule(client, agent.tenant, agent.name, "morning", start, end)
        await _fired(client, sid, 3)
        await settled(client, agent, wakes=3)
        # The same days again: three more fires, no new wake.
        await sch.backfill_schedule(client, agent.tenant, agent.name, "morning", start, end)
        await _fired(client, sid, 6)
        await settled(client, agent, wakes=3)

        await sch.unpause_schedule(client, agent.tenant, agent.name, "morning")
        assert not (await client.get_schedule_handle(sid).describe()).schedule.state.paused
        await sch.pause_schedule(client, agent.tenant, agent.name, "morning", "done")
        desc = await client.get_schedule_handle(sid).describe()
        assert desc.schedule.state.paused and desc.schedule.state.note == "done"
        assert desc.schedule.policy.catchup_window == sch.DEFAULT_CATCHUP
        # SKIP, not the server's default BUFFER_ONE: see wakeful/worker/schedules.py.
        assert desc.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        await sch.delete_schedule(client, agent.tenant, agent.name, "morning")
        await _listed(client, agent, 0)

    wakes = ts.wakes(agent.name)
    days = [start + timedelta(days=i) for i in range(3)]
    assert sorted(w.idempotency_key or "" for w in wakes) == [schedule_key(sid, d) for d in days]
    assert all(w.goal["kind"] == "schedule" for w in wakes)


def test_bad_schedules_are_refused_with_the_reason() -> None:
    with pytest.raises(UserError, match="schedule name"):
        sch.schedule_id("t", "a", "no spaces")


async def test_a_schedule_needs_exactly_one_spec(temporal_dev: WorkflowEnvironment) -> None:
    rt = Agent(name="x", instructions="x").runtime()
    with pytest.raises(UserError, match="exactly one of every"):
        await sch.create_schedule(temporal_dev.client, rt, "n", message="m", task_queue="q")
    with pytest.raises(UserError, match="shorter than a minute"):
        await sch.create_schedule(
            temporal_dev.client, rt, "n", message="m", task_queue="q", every=timedelta(seconds=5)
        )
