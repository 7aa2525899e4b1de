"""The per-agent consolidation schedules through Temporal's Schedule API (dev server)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from temporalio.client import ScheduleActionStartWorkflow
from temporalio.testing import WorkflowEnvironment

from tests.consolidation.workers import running_worker
from tests.conversation import conversation
from wakeful.agents import Agent
from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.schedule import ensure_consolidation_schedules
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer

POLICY = ConsolidationPolicy(keep_recent_events=2, span_min_events=2)


async def test_schedules_fire_daily_rounds_and_hourly_pressure_checks(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, ops: Agent
) -> None:
    client = temporal_dev.client
    ts = store.tenant(ops.tenant)
    old = datetime.now(UTC) - timedelta(days=2)
    texts = [f"Turn {n}: the queue is calm." for n in range(8)]
    ts.append_events("ops", conversation(texts, session_id="ops:s1", start=old, step_key="e"))
    async with running_worker(client, store, [ops], sim) as queue:
        handles = await ensure_consolidation_schedules(client, ops.runtime(), queue, policy=POLICY)
        try:
            daily, pressure = [await h.describe() for h in handles]
            assert [i.every for i in daily.schedule.spec.intervals] == [timedelta(days=1)]
            assert [i.every for i in pressure.schedule.spec.intervals] == [timedelta(hours=1)]
            # Days 1..7: the next seven fire times are one day apart.
            upcoming = list(daily.info.next_action_times)[:7]
            assert len(upcoming) == 7
            assert all(b - a == timedelta(days=1) for a, b in pairwise(upcoming))
            action = pressure.schedule.action
            assert isinstance(action, ScheduleActionStartWorkflow)
            (gated,) = await client.data_converter.decode(action.args, [ConsolidationInput])  # type: ignore[arg-type]
            assert gated.only_if_pressured and gated.reason == "pressure"

            # Ensuring again updates the definition in place.
            again = await ensure_consolidation_schedules(
                client, ops.runtime(), queue, every=timedelta(hours=12), policy=POLICY
            )
            assert [h.id for h in again] == [h.id for h in handles]
            daily = await handles[0].describe()
            assert [i.every for i in daily.schedule.spec.intervals] == [timedelta(hours=12)]

            await handles[0].trigger()
            for _ in range(200):
                daily = await handles[0].describe()
                if daily.info.recent_actions:
                    break
                await asyncio.sleep(0.05)
            fired = daily.info.recent_actions[0].action
            run = client.get_workflow_handle(fired.workflow_id, result_type=ConsolidationResult)
            result = await run.result()
            assert result.reason == "schedule" and result.accepted == 1
            assert len(ts.summaries("ops")) == 1
        finally:
            for h in handles:
                await h.delete()
