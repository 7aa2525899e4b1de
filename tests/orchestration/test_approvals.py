"""Tool calls that need a person's approval, on the time-skipping server.

The wake stops before running ``deploy`` and waits — durably, a timer when the tool has an
approval timeout — for the agent workflow's ``approve`` update. A denial is the tool's
result the model reads next (the transcript's ``tool_result``, which the next window holds);
a timeout denies the call or parks the wake, per the tool's policy. Time only moves when
the test skips it (``env.sleep``), so no test depends on how fast anything runs.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.orchestration.approval_agents import SCRIPT, Deploys
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.contracts import PendingApproval
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client


async def waiting(client: Client, agent: Agent, polls: int = 600) -> PendingApproval:
    """The one call waiting for approval, once the wake has reached it (bounded poll)."""
    for _ in range(polls):
        found = await client.pending(agent)
        if found:
            (item,) = found
            return item
        await asyncio.sleep(0.05)
    raise AssertionError("no tool call ever waited for approval")


def tool_results(store: Store, agent: Agent, wake_id: str) -> list[str]:
    events = store.tenant(agent.tenant).events(agent.name, wake_id=wake_id)
    return [e.text for e in events if e.kind == "tool_result"]


async def test_a_denial_is_the_tool_result_the_model_reads(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store)
    async with worker(temporal_skipping.client, store, [agent], osim, script=SCRIPT) as (q, _):
        client = Client(temporal_skipping.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        item = await waiting(client, agent)
        assert (item.tool, item.deadline) == ("deploy", None)
        with pytest.raises(UserError, match="no tool call 'toolu_nope' waits for approval"):
            await client.approve(agent, "toolu_nope")
        decided = await client.approve(
            agent, item.call_id, approved=False, reason="not on a Friday", by="ana"
        )
        result = await handle.result()
        assert await client.pending(agent) == []
    assert decided.call_id == item.call_id
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    assert deploys.runs == []
    assert tool_results(store, agent, result.wake_id) == ["denied by ana: not on a Friday"]


async def test_an_approved_call_runs_once(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store, timeout_s=3600)
    async with worker(temporal_skipping.client, store, [agent], osim, script=SCRIPT) as (q, _):
        client = Client(temporal_skipping.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        item = await waiting(client, agent)
        assert item.deadline == item.requested_at + timedelta(seconds=3600)
        await client.approve(agent, item.call_id, by="ana")
        result = await handle.result()
        with pytest.raises(UserError, match="waits for approval"):  # decided already
            await client.approve(agent, item.call_id, by="ana")
    assert (result.status, deploys.runs) == ("done", ["billing@v42"])
    assert tool_results(store, agent, result.wake_id) == ["deployed billing v42"]
    # The transcript says who let it run.
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    (done,) = [e for e in events if e.kind == "tool_result"]
    assert done.meta["approved_by"] == "ana"


async def test_no_decision_in_time_denies_the_call(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store, timeout_s=3600, on_timeout="deny")
    async with worker(temporal_skipping.client, store, [agent], osim, script=SCRIPT) as (q, _):
        client = Client(temporal_skipping.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        await waiting(client, agent)
        await temporal_skipping.sleep(timedelta(seconds=3601))
        result = await handle.result()
    assert (result.status, deploys.runs) == ("done", [])
    assert tool_results(store, agent, result.wake_id) == [
        "denied by the approval timeout: no decision within 3600 s"
    ]


async def test_no_decision_in_time_parks_the_wake(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store, timeout_s=2 * 86400, on_timeout="park")
    async with worker(temporal_skipping.client, store, [agent], osim, script=SCRIPT) as (q, _):
        client = Client(temporal_skipping.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        item = await waiting(client, agent)
        await temporal_skipping.sleep(timedelta(days=2, seconds=1))
        result = await handle.result()
    why = f"the approval of deploy call {item.call_id}: no decision within 172800 s"
    assert (result.status, result.error, result.model_calls) == ("parked", why, 1)
    assert deploys.runs == []
    assert tool_results(store, agent, result.wake_id) == [f"not run: the wake was parked ({why})"]
