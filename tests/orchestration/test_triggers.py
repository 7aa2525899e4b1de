"""Triggers on the time-skipping server: a webhook delivered twice wakes once, before and
after the workflow continues-as-new, and the agent recovers its numbering after a stop."""

from __future__ import annotations

import uuid

from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import agent_handle, serving_agent, settled, worker
from wakeful.agents import Agent
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver, wake
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id


def webhook(event_id: str) -> Trigger:
    return Trigger(
        goal=Goal(kind=GoalKind.WEBHOOK, text=f"deploy failed (event {event_id}): list_dir ."),
        idempotency_key=f"webhook:{event_id}",
    )


async def test_a_webhook_delivered_twice_wakes_once(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, rt = temporal_skipping, agent.runtime()
    event = uuid.uuid4().hex
    async with worker(env.client, store, [agent], osim) as (queue, _):
        await deliver(env.client, rt, webhook(event), queue)  # signal-with-start: starts it
        await deliver(env.client, rt, webhook(event), queue)  # the provider retried: same key
        await settled(env.client, agent, wakes=1)
        await deliver(env.client, rt, webhook(event), queue)  # after the wake: still the same
        again = await wake(env.client, rt, webhook(event), queue)  # update: answered, not rerun
        status = await settled(env.client, agent, wakes=1)
    assert again.deduplicated and again.number == 1
    assert status.wakes == 1
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert only.idempotency_key == f"webhook:{event}"
    assert only.goal["kind"] == "webhook"


async def test_continue_as_new_carries_state_and_deduplication(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, rt = temporal_skipping, agent.runtime()
    async with worker(env.client, store, [agent], osim) as (queue, _):
        first = await env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(runtime=rt, wakes_per_run=2),
            id=workflow_id(agent.tenant, agent.name),
            task_queue=queue,
        )
        results = [
            await wake(env.client, rt, message(f"hello {i}", f"k{i}"), queue) for i in range(3)
        ]
        dup = await wake(env.client, rt, message("hello 0", "k0"), queue)
        status = await agent_handle(env.client, agent).query(AgentWorkflow.status)
        described = await env.client.get_workflow_handle(
            first.id, run_id=first.result_run_id
        ).describe()
    assert [r.number for r in results] == [1, 2, 3]
    assert described.status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    assert dup.deduplicated and dup.wake_id == results[0].wake_id
    assert status.wakes == 3 and status.session_id == "s0001"


async def test_a_stopped_agent_restarts_with_its_numbering(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("hello", "before-stop")
        handle = agent_handle(env.client, agent)
        await handle.signal(AgentWorkflow.stop)
        final = await env.client.get_workflow_handle(handle.id).result()
        two = await served.ask("hello again", "after-stop")
        dup = await served.ask("hello", "before-stop")
    assert final["wakes"] == 1  # type: ignore[index]
    assert (one.number, two.number) == (1, 2)
    assert two.session_id != one.session_id  # a restarted workflow opens a new session
    assert dup.deduplicated and dup.wake_id == one.wake_id  # recovered from the substrate
    ts = store.tenant(agent.tenant)
    ends = [n for n in ts.handoffs(agent.name) if n.step_key.endswith(":session-end")]
    assert [n.session_id for n in ends] == [one.session_id]
    assert "ended (stopped)" in ends[0].body.current_state
