"""A tool result too long for any window no longer ends a wake: in a real wake (dev server,
Postgres, the provider simulator scripting the calls), a 1.8 MB result is stored whole, its
event and the window get its head and tail with a note naming the omitted characters and a
handle, the built-in ``read_result`` tool joins the window's tools, and the model reads on
from the offset the note gives."""

from __future__ import annotations

import json
import uuid
from typing import Any

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful import Agent, AgentRegistry
from wakeful.compiler.blocks import content_hash
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tool_results import PAGE_CHARS, page
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

LOG = "".join(f"{n:07d} checkout p99 {200 + n % 97} ms retries {n % 7}\n" for n in range(48_000))


async def test_a_huge_result_is_shown_in_part_and_read_in_pages(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    assert len(LOG) > 1_800_000
    agent = Agent(name="reader", instructions="Read logs.", tenant=f"big-{uuid.uuid4().hex[:8]}")

    @agent.tool
    def dump_log() -> str:
        """The whole checkout log."""
        return LOG

    handle = content_hash(LOG)  # what the stored result is addressed by
    limit = agent.get_tool("dump_log").max_result_chars
    offset = limit * 3 // 4
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "dump_log", "input": {}}]},
        {"tool_calls": [{"name": "read_result", "input": {"handle": handle, "offset": offset}}]},
        {"text": "Read it."},
    ]
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    async with running_worker(temporal_dev.client, store, AgentRegistry([agent]), sim, key) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("how is checkout?"), q)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 3, 2)
    ts = store.tenant(agent.tenant)
    shown, paged = [
        e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"
    ]
    assert shown.meta["capped"] == str(len(LOG)) and ts.get_blob(shown.meta["result_blob"]) == LOG
    assert len(shown.text) < limit + 200 and LOG.startswith(shown.text[:offset])
    assert f'read_result(handle="{handle}", offset={offset})' in shown.text
    assert shown.text.endswith(LOG[-(limit // 4) :])
    assert not paged.is_error and paged.text == page(LOG, offset)
    assert len(paged.text) < PAGE_CHARS + 100
    compiles = ts.compiles(result.wake_id)
    tools = [[t["name"] for t in json.loads(ts.get_blob(c.window_hash))["tools"]] for c in compiles]
    assert tools == [["dump_log"], ["dump_log", "read_result"], ["dump_log", "read_result"]]
    assert max(c.input_tokens for c in compiles) < 30_000  # the window never held the log
