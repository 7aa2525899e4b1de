"""Sessions end with a handoff note — on ``/handoff``, when idle, when a wake spends its
budget — and the next wake opens a new session that compiles from that note."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import agent_handle, serving_agent
from wakeful.agents import Agent
from wakeful.compiler import Ledger
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
    """The agent set its idle limit: the timer ends the session whatever pacing would say."""
    env = temporal_skipping
    agent = dataclasses.replace(agent, handoff_after_idle="1h")
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


async def test_past_an_unset_idle_limit_a_small_session_continues_and_the_ledger_says_why(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """No handoff_after_idle: at the default hour the timer asks pacing, which prices
    rewriting this one-wake session cold below a handoff (a fresh prefix and the evidence
    of it the next session's first wakes would bring back). The session stays open, no note
    is written, and the next wake continues it; its ledger says why."""
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("list_dir .")
        handle = agent_handle(env.client, agent)
        await env.sleep(timedelta(hours=2))
        osim.simulator.advance(2 * 3600)  # the provider's cache ages too
        for _ in range(100):  # the timer's decision is made in workflow time, then queried
            status = await handle.query(AgentWorkflow.status)
            if "max_idle" in status.pacing:
                break
            await env.sleep(timedelta(seconds=1))
        two = await served.ask("and now?")
    assert status.session_open, status.pacing
    assert status.pacing.startswith("pacing continue_now: idle 1h0"), status.pacing
    assert "but no handoff_after_idle was set: priced" in status.pacing
    assert _session_ends(store, agent) == []
    assert two.session_id == one.session_id and two.pacing == "continue_now"
    ts = store.tenant(agent.tenant)
    ledger = Ledger.model_validate_json(ts.get_blob(ts.compiles(two.wake_id)[0].ledger_hash))
    assert ledger.decisions["session"].startswith("continued s0001 (idle past session_idle")
    assert "idle 2h0" in ledger.notes[0] and "> max_idle 1h00m" in ledger.notes[0]
    prices = dict(p.split("=") for p in ledger.decisions["pacing.prices_usd"].split())
    assert float(prices["continue_now"]) <= float(prices["handoff"])
    assert any(
        n.startswith("idle timer at ") and "continued past session_idle 1:00:00" in n
        for n in ledger.notes
    )
