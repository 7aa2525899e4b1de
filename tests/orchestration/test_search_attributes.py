"""People find an agent's workflows in Temporal by agent: the worker registers Wakeful's
search attributes on the namespace, and the agent workflow tags itself with its tenant,
agent and session (a new session updates the tag)."""

from __future__ import annotations

import asyncio
import time
import uuid

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.agent import workflow_id
from wakeful.workflows.search import AGENT, SESSION, TENANT


async def _listed(client: Client, query: str) -> list[str]:
    """Workflow ids the query lists; visibility is eventually consistent, so wait for one."""
    deadline = time.monotonic() + 30  # a failure bound, not the thing under test
    while True:
        found = [w.id async for w in client.list_workflows(query)]
        if found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


async def test_an_agents_workflow_is_found_by_agent_and_carries_its_session(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client = temporal_dev.client
    rt = agent.runtime()
    async with worker(client, store, [agent], osim, search_attributes=True) as (queue, _):
        first = await wake(client, rt, message("list_dir .", uuid.uuid4().hex), queue)
        handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
        tags = (await handle.describe()).typed_search_attributes
        second = await wake(
            client, rt, message("list_dir .", uuid.uuid4().hex, new_session=True), queue
        )
        later = (await handle.describe()).typed_search_attributes
        history = await handle.fetch_history()
    assert tags.get(TENANT) == agent.tenant and tags.get(AGENT) == agent.name
    assert tags.get(SESSION) == first.session_id
    assert second.session_id != first.session_id and later.get(SESSION) == second.session_id
    found = await _listed(
        client, f'WakefulAgent = "{agent.name}" AND WakefulTenant = "{agent.tenant}"'
    )
    assert found == [workflow_id(agent.tenant, agent.name)]
    in_session = await _listed(client, f'WakefulSession = "{second.session_id}"')
    assert in_session == found
    # The tags are workflow commands: the history with them replays.
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter)
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None
