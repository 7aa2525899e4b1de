"""Sessions end with a handoff note — on ``/handoff``, when idle, when a wake spends its
budget — and the next wake opens a new session that compiles from that note."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import agent_handle, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import AgentWorkflow


def _session_ends(store: Store, agent: Agent) -> list[tuple[str, str]]:
    notes = store.tenant(agent.tenant).handoffs(agent.name)
    return [(n.session_id, n.body.current_state) for n in notes if "session-end" in n.step_key]


async def test_explicit_handoff_ends_the_session_and_the_next_wake_starts_from_the_note(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, rt = temporal_skipping, agent.runtime()
    async with worker(env.client, store, [agent], osim) as (queue, _):
        one = await wake(env.client, rt, message("read_file docs/design.md"), queue)
        done = await wake(env.client, rt, message("/handoff switching to the release"), queue)
        status = await agent_handle(env.client, agent).query(AgentWorkflow.status)
        two = await wake(env.client, rt, message("what were we doing?"), queue)
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
    env, rt = temporal_skipping, agent.runtime()
    async with worker(env.client, store, [agent], osim) as (queue, _):
        one = await wake(env.client, rt, message("list_dir ."), queue)
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
    async with worker(env.client, store, [tight], osim) as (queue, _):
        one = await wake(env.client, tight.runtime(), message("list_dir ."), queue)
        two = await wake(env.client, tight.runtime(), message("and now?"), queue)
    assert one.status == "call_budget"
    ((session, state),) = _session_ends(store, agent)
    assert session == one.session_id and "ended (budget: the wake ended with call_budget)" in state
    assert two.session_id != one.session_id
