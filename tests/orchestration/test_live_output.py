"""Live tool output in a running agent (``compiler/live_output.py``): on the time-skipping
server, a result past its tool's ``fresh_for`` and (with the policy's
``resolve_repeated_calls``) a result whose call the model repeated become notes in the next
window, and the ledger names the rule that fired."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.compiler import Ledger, load_policy
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.typed_tools import tool
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id
from wakeful.workflows.pacing import PacingPolicy


@tool(fresh_for=timedelta(minutes=10), authoritative=True)
def deploy_status(service: str) -> str:
    """The current deploy of a service."""
    return f"{service}: deploy 41 rolled out, all checks green"


async def test_a_stale_and_a_repeated_result_become_notes_and_the_ledger_says_why(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, tmp_path: Path
) -> None:
    env = temporal_skipping
    agent = Agent(
        name="watch",
        instructions=INSTRUCTIONS,
        tools=(*DEMO_TOOLS, deploy_status),
        workdir=str(seed_workspace(tmp_path / "ws")),
        tenant=f"live-{uuid.uuid4().hex[:10]}",
        policy="repeats",
    )
    repeats = load_policy("[eviction]\nresolve_repeated_calls = true\n")
    register_agent(store.tenant(agent.tenant), agent)
    rt = agent.runtime()
    async with worker(env.client, store, [agent], osim, policies={"repeats": repeats}) as (
        queue,
        _,
    ):
        await env.client.start_workflow(  # one session throughout: no handoff after the gap
            AgentWorkflow.run,
            AgentInput(runtime=rt, pacing=PacingPolicy(allow_handoff=False)),
            id=workflow_id(agent.tenant, agent.name),
            task_queue=queue,
        )
        read = await wake(env.client, rt, message("read_file README.md"), queue)
        status = await wake(env.client, rt, message("deploy_status service=checkout"), queue)
        fresh = await wake(env.client, rt, message("anything new?"), queue)
        await env.sleep(timedelta(minutes=11))
        osim.simulator.advance(11 * 60)
        again = await wake(env.client, rt, message("read_file README.md"), queue)

    assert read.session_id == status.session_id == again.session_id
    ts = store.tenant(agent.tenant)

    def last_compile(wake_id: str) -> tuple[Ledger, str]:
        rec = ts.compiles(wake_id)[-1]
        return Ledger.model_validate_json(ts.get_blob(rec.ledger_hash)), ts.get_blob(
            rec.window_hash
        )

    tool_of = {f"ev:{e.id}": e.tool_name for e in ts.events(agent.name)}

    def results(ledger: Ledger, tool_name: str) -> list[tuple[str, str]]:
        """Each result of the tool in the window: its status and the rule that set it."""
        return [
            (r.status, r.rule)
            for r in ledger.rows
            if r.kind == "tool_result" and tool_of.get(r.block_id) == tool_name
        ]

    def sent(window: str, tool_name: str) -> list[str]:
        """What each result of the tool says in the request (tool_result contents)."""
        messages = json.loads(window)["messages"]
        blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
        ids = {b["id"] for b in blocks if b["type"] == "tool_use" and b["name"] == tool_name}
        return [
            str(b["content"])
            for b in blocks
            if b["type"] == "tool_result" and b["tool_use_id"] in ids
        ]

    # Within its ten minutes the status is sent whole.
    ledger, window = last_compile(fresh.wake_id)
    assert sent(window, "deploy_status") == ["checkout: deploy 41 rolled out, all checks green"]
    assert results(ledger, "deploy_status") == [("included", "budget.allocations.recent")]

    # Eleven minutes on, it is a note that asks for a fresh call (without the stale content);
    # the model's call is sent as it was made.
    ledger, window = last_compile(again.wake_id)
    (note,) = sent(window, "deploy_status")
    assert note.startswith("[deploy_status output of ~") and "went out of date at" in note
    assert note.endswith("call deploy_status again for the current state]")
    assert '"input":{"service":"checkout"},"name":"deploy_status"' in window
    assert results(ledger, "deploy_status") == [("collapsed", "tool.fresh_for")]
    # The first README read was made again in this wake: the later result stands for both.
    assert results(ledger, "read_file") == [
        ("collapsed", "eviction.resolve_repeated_calls"),
        ("included", "snapshot.current_wake_id"),
    ]
    first, second = sent(window, "read_file")
    assert first.startswith("[read_file output of ~") and "superseded by a later call" in first
    assert "superseded" not in second
