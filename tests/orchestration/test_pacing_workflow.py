"""On the time-skipping server: the workflow prices each wake before it runs. A short gap
keeps the warm session; a gap longer than the cache TTL makes a fresh session cheaper, and
the first compile's ledger says so, with the prices."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, scheduled
from tests.orchestration.helpers import agent_handle, serving_agent, worker
from wakeful.agents import Agent
from wakeful.compiler import Ledger
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id
from wakeful.workflows.pacing import PacingPolicy


async def _sleep(env: WorkflowEnvironment, sim: SimulatorServer, gap: timedelta) -> None:
    await env.sleep(gap)
    sim.simulator.advance(gap.total_seconds())  # the provider's cache ages too


async def test_an_idle_gap_longer_than_the_ttl_changes_the_pacing_decision(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    # A session worth its price: its transcript holds a long incident log, which a new
    # session would not carry (only what retrieval brings back of it).
    log = "\n".join(f"09:{i:02d} checkout p99 {200 + i} ms, retries {i % 7}" for i in range(90))
    (Path(agent.workdir) / "docs" / "incident.md").write_text(log)
    async with serving_agent(env.client, store, agent, osim) as served:
        one = await served.ask("read_file README.md")
        await _sleep(env, osim, timedelta(minutes=1))
        two = await served.ask("read_file docs/incident.md")
        await _sleep(env, osim, timedelta(minutes=10))
        three = await served.ask("read_file docs/roadmap.md")
        status = await agent_handle(env.client, agent).query(AgentWorkflow.status)

    assert [w.pacing for w in (one, two, three)] == ["handoff", "continue_now", "handoff"]
    assert one.session_id == two.session_id != three.session_id
    ts = store.tenant(agent.tenant)

    def ledger(wake_id: str) -> Ledger:
        return Ledger.model_validate_json(ts.get_blob(ts.compiles(wake_id)[0].ledger_hash))

    warm, cold = ledger(two.wake_id), ledger(three.wake_id)
    assert warm.decisions["pacing"] == "continue_now"
    assert warm.decisions["session"] == "continued s0001"
    assert "idle 1m0" in warm.notes[0] and "<= session TTL 5m00s" in warm.notes[0]
    assert cold.decisions["pacing"] == "handoff"
    assert cold.decisions["session"] == "new s0002 (pacing chose a handoff)"
    assert "idle 10m0" in cold.notes[0] and "> session TTL 5m00s" in cold.notes[0]
    prices = dict(p.split("=") for p in cold.decisions["pacing.prices_usd"].split())
    assert float(prices["handoff"]) < float(prices["continue_now"])
    # TTLs follow the gaps: a 1 min gap keeps 5 min entries; after a 10 min one the stable
    # prefix is written for an hour (one such gap is not enough for the session's).
    assert warm.decisions["pacing.cache_ttl"].endswith("stable 5m, session 5m")
    assert cold.decisions["pacing.cache_ttl"].startswith("1 of the last 2 idle gap(s)")
    assert cold.decisions["pacing.cache_ttl"].endswith("stable 1h, session 5m")

    def system_ttl(wake_id: str) -> str:
        window = json.loads(ts.get_blob(ts.compiles(wake_id)[0].window_hash))
        return str(window["system"][0]["cache_control"]["ttl"])

    assert (system_ttl(two.wake_id), system_ttl(three.wake_id)) == ("5m", "1h")
    # Calls 2+ of a wake carry no pacing annotations (the decision is per wake).
    assert (
        "pacing"
        not in Ledger.model_validate_json(
            ts.get_blob(ts.compiles(three.wake_id)[1].ledger_hash)
        ).decisions
    )
    # The query exposes the cache clock the decision was made from.
    assert status.cache_clock is not None and status.cache_clock.stable_tokens > 0
    assert status.cache_clock.session_ttl_s == 300 and status.cache_clock.stable_ttl_s == 3600


async def test_keep_warm_calls_hold_the_cache_until_the_next_expected_wake(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, rt = temporal_skipping, agent.runtime()
    policy = PacingPolicy(allow_handoff=False)  # keep the session: price sleep vs keep-warm
    # A session worth keeping warm: its transcript holds a long incident log.
    log = "\n".join(f"09:{i:02d} checkout p99 {200 + i} ms, retries {i % 7}" for i in range(60))
    (Path(agent.workdir) / "docs" / "incident.md").write_text(log)
    async with worker(env.client, store, [agent], osim) as (queue, _):
        await env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(runtime=rt, pacing=policy),
            id=workflow_id(agent.tenant, agent.name),
            task_queue=queue,
        )
        now = await env.get_current_time()
        soon = Trigger(
            goal=Goal(kind=GoalKind.SCHEDULE, text="read_file docs/incident.md"),
            idempotency_key="tick-1",
            next_expected_at=now + timedelta(minutes=12),
        )
        one = await wake(env.client, rt, soon, queue)
        idle = await agent_handle(env.client, agent).query(AgentWorkflow.status)
        await env.sleep(timedelta(minutes=12))
        two = await wake(env.client, rt, message("read_file docs/design.md", "tick-2"), queue)
        history = await agent_handle(env.client, agent).fetch_history()

    assert idle.pacing.startswith("pacing keep_warm: next wake expected 1"), idle.pacing
    pings = scheduled(history, "wakeful.keep_warm")
    assert len(pings) == 2
    assert two.session_id == one.session_id and two.pacing == "continue_now"
    ts = store.tenant(agent.tenant)
    notes = Ledger.model_validate_json(ts.get_blob(ts.compiles(two.wake_id)[0].ledger_hash)).notes
    # Each idle note carries its own time, between the two wakes (the console draws it there).
    first_at, second_at = ts.compiles(one.wake_id)[0].as_of, ts.compiles(two.wake_id)[0].as_of
    idle_at = [
        datetime.fromisoformat(m[1])
        for n in notes
        if (m := re.match(r"^(?:while idle|keep-warm call \d) at (\S+): ", n))
    ]
    assert any(n.startswith("while idle at ") and ": pacing keep_warm" in n for n in notes)
    assert any(re.match(r"^keep-warm call 2 at \S+: read ", n) for n in notes)
    assert len(idle_at) >= 3 and all(first_at < t < second_at for t in idle_at), idle_at


async def test_a_first_call_nothing_would_read_in_time_writes_no_session_entry(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """Wakes of one call each, two hours apart: what a first call writes past the stable
    prefix expires unread. Once the clock has seen enough such wakes, the first call sends
    the session part as plain input, and its ledger says why, with the prices."""
    env = temporal_skipping
    async with serving_agent(env.client, store, agent, osim) as served:
        results = []
        for n in range(6):
            if n:
                await _sleep(env, osim, timedelta(hours=2))
            results.append(await served.ask(f"status note {n}, nothing to look up"))
    assert [r.model_calls for r in results] == [1] * 6
    ts = store.tenant(agent.tenant)

    def first(wake_id: str) -> tuple[Ledger, dict[str, object]]:
        row = ts.compiles(wake_id)[0]
        window = json.loads(ts.get_blob(row.window_hash))
        return Ledger.model_validate_json(ts.get_blob(row.ledger_hash)), window

    def cache_controls(window: dict[str, object]) -> list[str]:
        return re.findall(r'"cache_control": \{[^}]*"ttl": "(\w+)"', json.dumps(window))

    young, _ = first(results[2].wake_id)
    assert "fewer than 4: written as always" in young.decisions["pacing.cache_write"]
    ledger, window = first(results[-1].wake_id)
    why = ledger.decisions["pacing.cache_write"]
    assert "0 of the last 5 wakes were read again within 5m" in why
    assert why.endswith("the first call writes no session entry")
    assert len(cache_controls(window)) == 1  # the stable prefix's alone
    assert len(ledger.breakpoints) > 1
    assert (ledger.breakpoints[0].name, ledger.breakpoints[0].explicit) == ("stable", True)
    assert all(b.ttl == "none" and not b.explicit for b in ledger.breakpoints[1:])
    # What was sent past the stable prefix was billed as input, not written.
    assert results[-1].cache_creation_input_tokens <= ledger.breakpoints[0].prefix_tokens
    assert results[-1].input_tokens > 0
