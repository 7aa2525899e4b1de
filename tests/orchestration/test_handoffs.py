"""Sessions end with a handoff note — on ``/handoff``, when idle, when a wake spends its
budget — and the next wake opens a new session that compiles from that note."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import agent_handle, serving_agent
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.workflows.agent import AgentWorkflow


def _session_ends(store: Store, agent: Agent) -> list[tuple[str, str]]:
    notes = store.tenant(agent.tenant).handoffs(agent.name)
    return [(n.session_id, n.body.current_state) for n in notes if "session-end" in n.step_key]


async def test_explicit_handoff_ends_the_session_and_the_next_wake_starts_from_the_note(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("read_file docs/design.md")
        done = await served.ask("/handoff switching to the release")
        status = await agent_handle(env.client, agent).query(AgentWorkflow.status)
        two = await served.ask("what were we doing?")
    assert done.status == "handoff" and done.model_calls == 0 and done.handoff_id > 0
    assert not status.session_open
    assert two.session_id != one.session_id
    ((session, state),) = _session_ends(store, agent)
    assert session == one.session_id
    assert state.startswith(
        f"Session {one.session_id} ended (explicit /handoff: switching to the release)"
    )
    ts = store.tenant(agent.tenant)
    window = ts.get_blob(ts.model_calls(two.wake_id)[0].window_hash)
    assert f"handoff:{done.handoff_id}" in window
    assert "ended (explicit /handoff: switching to the release)" in window


async def test_an_idle_session_ends_with_a_note_while_the_agent_sleeps(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("list_dir .")
        assert _session_ends(store, agent) == []
        await env.sleep(timedelta(hours=2))
        handle = agent_handle(env.client, agent)
        for _ in range(100):  # the idle timer's activity runs in real time
            if not (await handle.query(AgentWorkflow.status)).session_open:
                break
            await env.sleep(timedelta(seconds=1))
    ((session, state),) = _session_ends(store, agent)
    assert session == one.session_id
    assert "ended (idle: no wake for 1:00:" in state and "(session_idle 1:00:00)" in state


async def test_a_wake_that_spends_its_budget_ends_the_session(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    tight = dataclasses.replace(agent, max_model_calls_per_wake=1)
    async with serving_agent(env.client, store, tight, osim) as served:
        one = await served.ask("list_dir .")
        two = await served.ask("and now?")
    assert one.status == "call_budget"
    ((session, state),) = _session_ends(store, agent)
    assert session == one.session_id and "ended (budget: the wake ended with call_budget)" in state
    assert two.session_id != one.session_id
