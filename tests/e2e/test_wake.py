"""End-to-end wakes on the Temporal dev server, real Postgres, the real Anthropic SDK."""

from __future__ import annotations

import json
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import workflow_id


async def test_one_wake_runs_compile_model_tool_record_and_handoff(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("list_dir . please"), q)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(agent.tenant)
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert [(e.kind, e.role) for e in events] == [
        ("turn", "user"),
        ("turn", "assistant"),  # the model says what it is about to do...
        ("tool_call", "assistant"),  # ...and calls the tool in the same reply
        ("tool_result", "user"),
        ("turn", "assistant"),
    ]
    assert "README.md" in events[3].text  # the real tool listed the real directory
    assert len(ts.compiles(result.wake_id)) == 2
    calls = ts.model_calls(result.wake_id)
    assert [c.call_index for c in calls] == [0, 1]
    # The window is stored (claim-check) and is what the SDK sent: the tool result is in it.
    second = json.loads(ts.get_blob(calls[1].window_hash))
    assert "README.md" in json.dumps(second)
    note = ts.latest_handoff(agent.name)
    assert note is not None and note.wake_id == result.wake_id
    assert note.body.goal == "list_dir . please"


async def test_workflow_history_holds_references_not_windows(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        await wake(temporal_dev.client, agent.runtime(), message("read_file README.md"), q)
    handle = temporal_dev.client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
    history = json.dumps((await handle.fetch_history()).to_json_dict())
    # The system prompt and the file body are in every window, never in the history.
    assert "Operating rules" not in history
    assert "Lighthouse watches a fleet" not in history


async def test_duplicate_trigger_wakes_once(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    registry = AgentRegistry([agent])
    key = f"dup-{uuid.uuid4().hex}"
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        first = await wake(temporal_dev.client, agent.runtime(), message("hello", key), q)
        again = await wake(temporal_dev.client, agent.runtime(), message("hello", key), q)
    assert again.wake_id == first.wake_id
    assert len(store.tenant(agent.tenant).wakes(agent.name)) == 1


async def test_new_session_resumes_from_the_handoff_not_the_transcript(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    registry = AgentRegistry([agent])
    rt = agent.runtime()
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        one = await wake(temporal_dev.client, rt, message("read_file docs/design.md"), q)
        two = await wake(
            temporal_dev.client, rt, message("what did we learn yesterday?", new_session=True), q
        )
    assert one.session_id != two.session_id
    ts = store.tenant(agent.tenant)
    (compiled,) = ts.model_calls(two.wake_id)
    window = ts.get_blob(compiled.window_hash)
    assert "## Goal\\nread_file docs/design.md" in window  # the handoff note of session 1
    # ...and not session 1's transcript: no tool traffic, no earlier ask.
    blocks = [b for m in json.loads(window)["messages"] for b in _content(m)]
    assert not [b for b in blocks if b.get("type") in ("tool_use", "tool_result")]
    assert not [b for b in blocks if b.get("text") == "read_file docs/design.md"]


def _content(message: dict[str, object]) -> list[dict[str, object]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)  # type: ignore[arg-type]
