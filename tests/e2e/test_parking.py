"""A poisoned trigger is parked with its error instead of being retried forever."""

from __future__ import annotations

import dataclasses
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.providers.simulator.server import SimulatorServer
from wakeful.substrate.store import Store
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent


async def test_a_compile_that_can_never_succeed_parks_the_wake_and_the_agent_goes_on(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    # A policy name no worker knows fails every compile the same way: no retry can help.
    broken = dataclasses.replace(agent, policy="no-such-policy")
    register_agent(store.tenant(broken.tenant), broken)
    registry = AgentRegistry([broken])
    rt = broken.runtime()
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        first = await wake(temporal_dev.client, rt, message("list_dir ."), q)
        second = await wake(temporal_dev.client, rt, message("read_file README.md"), q)

    assert (first.status, first.model_calls) == ("parked", 0)
    # The workflow is still serving: the next trigger got its own wake (parked the same way).
    assert (second.status, second.number) == ("parked", first.number + 1)
    ts = store.tenant(broken.tenant)
    assert [w.status for w in ts.wakes(broken.name)] == ["parked", "parked"]
    assert ts.model_calls(first.wake_id) == []
