"""Quick tools run as local activities; a tool that needs a heartbeat or time cannot.

A local tool skips the task-queue round trip a regular activity costs (a workflow task of
its own and three history events), which is most of a short tool's share of a wake.
"""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful.agents import Agent, AgentRegistry, Tool
from wakeful.errors import UserError
from wakeful.providers.simulator.server import SimulatorServer
from wakeful.substrate.store import Store
from wakeful.worker.client import wake
from wakeful.workflows.agent import workflow_id


def _tool(**kw: object) -> Tool:
    return Tool(name="t", description="d", input_schema={}, fn=lambda a, c: "", **kw)  # type: ignore[arg-type]


def test_a_local_tool_may_not_heartbeat_or_run_long() -> None:
    with pytest.raises(UserError, match="cannot heartbeat"):
        _tool(local=True, timeout_s=5.0, heartbeat_s=1.0)
    with pytest.raises(UserError, match="must finish within 10 s"):
        _tool(local=True, timeout_s=60.0)
    assert _tool(local=True, timeout_s=10.0).local


async def test_a_local_tool_runs_in_the_workflow_task_and_is_recorded_once(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    assert next(t for t in agent.tools if t.name == "list_dir").local
    async with running_worker(
        temporal_dev.client, store, AgentRegistry([agent]), sim, uuid.uuid4().hex
    ) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("list_dir . please"), q)
    assert (result.status, result.tool_calls) == ("done", 1)
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    (tool_result,) = [e for e in events if e.kind == "tool_result"]
    assert "README.md" in tool_result.text
    history = await temporal_dev.client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == ["wakeful.call_model", "wakeful.call_model"]  # no run_tool task
