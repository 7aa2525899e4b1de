"""A wake followed as it runs: ``Client.stream`` on the dev server, real Postgres and the
simulator streaming through the official SDK, held after its first text piece so that
the order is shown by state, not timing: the first delta is read while the wake is still
running and its reply not yet stored."""

from __future__ import annotations

import json
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.base import ModelReply
from wakeful.substrate.store import Store
from wakeful.testing.simulator import Script, SimulatorServer
from wakeful.worker.client import Client
from wakeful.worker.streaming import TextDelta, ToolCallEvent, WakeEvent, WakeFinished

SCRIPT = [
    {
        "text": "Listing the workspace before answering.",
        "tool_calls": [{"name": "list_dir", "input": {"path": "."}}],
    },
    {"text": "The workspace holds the README and the service notes; nothing is missing."},
]


async def test_client_stream_yields_deltas_before_the_wake_ends_and_the_unstreamed_reply(
    temporal_dev: WorkflowEnvironment, store: Store, pg_url: str, agent: Agent
) -> None:
    key = uuid.uuid4().hex
    # A simulator of its own: its gate holds every stream it serves.
    with SimulatorServer(Script.parse(SCRIPT)) as sim:
        async with running_worker(
            temporal_dev.client, store, AgentRegistry([agent]), sim, key
        ) as queue:
            client = Client(temporal_dev.client, task_queue=queue, database_url=pg_url)
            ts = store.tenant(agent.tenant)
            sim.simulator.pace.hold()
            events: list[WakeEvent] = []
            async for event in client.stream(agent, "What is in the workspace?"):
                if not events:
                    # The model is mid-reply (held after its first piece): the wake runs,
                    # and no reply of it is stored yet.
                    assert isinstance(event, TextDelta) and event.call_index == 0
                    (wake,) = ts.wakes(agent.name)
                    assert wake.status == "running" and ts.model_calls(wake.wake_id) == []
                    sim.simulator.pace.release()
                events.append(event)

        finished = events[-1]
        assert isinstance(finished, WakeFinished)
        result = finished.result
        assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
        assert result.output == SCRIPT[1]["text"]
        # The first call's text came in pieces, then its tool call, whole.
        first = [e.text for e in events if isinstance(e, TextDelta) and e.call_index == 0]
        assert len(first) > 1 and "".join(first) == SCRIPT[0]["text"]
        calls = [e for e in events if isinstance(e, ToolCallEvent)]
        assert [(c.name, c.input, c.call_index) for c in calls] == [("list_dir", {"path": "."}, 0)]
        # The last call's pieces make its answer; they stay until the agent's next wake ends.
        last = [p.data["text"] for p in ts.stream_since(result.wake_id) if p.call_index == 1]
        assert "".join(last) == result.output

        # Each stored reply is what the same window gets unstreamed: sent again, in order,
        # to the simulator's scope started over (the same ids and cache accounting).
        sim.simulator.reset(key)
        sim.simulator.set_script(Script.parse(SCRIPT), key)
        provider = AnthropicProvider(key, base_url=sim.base_url, timeout=10)
        try:
            for call in ts.model_calls(result.wake_id):
                window = json.loads(ts.get_blob(call.window_hash))
                stored = ModelReply.model_validate_json(ts.get_blob(call.output_hash))
                assert stored == await provider.complete(window)
        finally:
            await provider.aclose()
