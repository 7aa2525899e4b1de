"""A trigger key the agent workflow let go of still wakes the agent once only.

The workflow keeps the results of its recent wakes (``AgentInput.remembered_results``); a
trigger repeating an older key is looked up in the substrate and answered with the wake it
started, however long ago. Here the workflow keeps two results and sees four keys; the
first, repeated, gets the first wake's answer and wakes nothing, on the dev server.
"""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import agent_handle, settled, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver, wake
from wakeful.workflows.agent import AgentWorkflow
from wakeful.workflows.state import AgentInput, workflow_id


async def test_a_key_let_go_of_is_answered_by_the_wake_it_started(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client, rt = temporal_dev.client, agent.runtime()
    async with worker(client, store, [agent], osim) as (queue, _):
        await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(runtime=rt, remembered_results=2),
            id=workflow_id(rt.tenant, rt.name),
            task_queue=queue,
        )
        for n in (1, 2, 3):  # signals: no update of these keys is in the history
            await deliver(client, rt, message(f"note {n}", key=f"event-{n}"), queue)
        await settled(client, agent, wakes=3)
        state = await agent_handle(client, agent).query(AgentWorkflow.status)
        again = await wake(client, rt, message("note 1", key="event-1"), queue)
        fresh = await wake(client, rt, message("note 4", key="event-4"), queue)

    assert state.wakes == 3
    assert again.deduplicated and again.wake_id == f"{rt.name}:1" and again.number == 1
    assert (again.status, again.model_calls) == ("done", 1)
    assert (fresh.number, fresh.deduplicated) == (4, False)
    wakes = store.tenant(rt.tenant).wakes(rt.name)
    assert [w.idempotency_key for w in wakes] == ["event-1", "event-2", "event-3", "event-4"]
