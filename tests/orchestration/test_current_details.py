"""The Temporal UI's view of an agent: its workflow's current details name the agent, its
session, the last wake and what it does now, read through Temporal's metadata query (they
write nothing into the history)."""

from __future__ import annotations

import uuid

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.workflows.agent import workflow_id


async def test_the_ui_shows_the_agent_its_session_and_last_wake(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client = temporal_dev.client
    async with worker(client, store, [agent], osim) as (queue, _):
        done = await wake(client, agent.runtime(), message("list_dir .", uuid.uuid4().hex), queue)
        handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
        meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        events = [e async for e in handle.fetch_history_events()]
    details = meta.current_details
    assert details.startswith(f"**{agent.name}**")
    assert f"session {done.session_id}" in details
    assert f"last wake #{done.number}: done, {done.model_calls} model calls" in details
    assert "now: waiting for a trigger" in details
    assert "pacing: " in details
    # Nothing of it is in the history.
    assert not any("waiting for a trigger" in str(e) for e in events)


async def test_each_model_call_and_tool_has_a_summary_in_the_history(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """The Temporal UI names each model call and remote tool step: 'model call 0', 'tool
    write_note', ... (activity summaries, recorded with the activity's scheduling; a local
    tool's marker carries none, to keep the history per wake small)."""
    client = temporal_dev.client
    async with worker(client, store, [agent], osim) as (queue, _):
        ask = message("write_note title=groceries body=milk", uuid.uuid4().hex)
        done = await wake(client, agent.runtime(), ask, queue)
        handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
        events = [e async for e in handle.fetch_history_events()]
    assert done.tool_calls == 1
    summaries = []
    for e in events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            kind = e.activity_task_scheduled_event_attributes.activity_type.name
            (text,) = await data_converter.decode([e.user_metadata.summary], [str])
            summaries.append((kind, text))
    calls = [f"model call {n}" for n in range(done.model_calls)]
    assert [t for k, t in summaries if k == "wakeful.call_model"] == calls
    assert [t for k, t in summaries if k == "wakeful.run_tool"] == ["tool write_note"]
