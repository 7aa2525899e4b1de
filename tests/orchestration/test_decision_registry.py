"""The decision registry end to end on the dev server: the model records a decision with the
built-in ``remember_decision`` tool, it survives consolidation rounds and stays in the window;
recording on the same key supersedes; a session's stated constraints are promoted as it ends;
a decision past its expiry is named in the next compile's ledger."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.conversation import conversation
from tests.e2e.harness import message
from tests.orchestration.helpers import scout, worker
from wakeful.agents import Agent
from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.decisions import REMEMBER_DECISION
from wakeful.replay import recompile
from wakeful.substrate.cache_outcomes import ledger_of
from wakeful.substrate.registry_repo import EXPIRED_ENTRY
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.consolidation import ConsolidationWorkflow

POLICY = ConsolidationPolicy(keep_recent_events=2, span_min_events=2)
OLD_TALK = (
    "Morning! Please check the payment queue.",
    "The queue drains steadily and the workers keep up.",
    "FYI, the day {n} release is v1.{n}.0.",
    "Noted, I will watch the rollout.",
    "How do the dashboards look?",
    "Calm, the alerts from the night have cleared.",
)


def _remember(key: str, text: str, rationale: str | None = None) -> str:
    """A message the simulator's planner answers by calling remember_decision with these."""
    args = {"key": key, "text": text} | ({"rationale": rationale} if rationale else {})
    return f"{REMEMBER_DECISION} {json.dumps(args)}"


def _window(ts: TenantStore, wake_id: str) -> str:
    *_, last = ts.compiles(wake_id)
    return ts.get_blob(last.window_hash)


def _old_session(ts: TenantStore, agent: str, n: int) -> None:
    """A closed session of days ago: history a consolidation round summarises and retires."""
    start = datetime.now(UTC) - timedelta(days=10 - n)
    texts = [text.format(n=n) for text in OLD_TALK]
    ts.append_events(
        agent,
        conversation(texts, session_id=f"{agent}:old{n}", start=start, step_key=f"old:{n}:"),
    )


async def _round(env: WorkflowEnvironment, agent: Agent, queue: str) -> ConsolidationResult:
    return await env.client.execute_workflow(
        ConsolidationWorkflow.run,
        ConsolidationInput(runtime=agent.runtime(), policy=POLICY, reason="demand"),
        id=f"consolidate-test-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=ConsolidationResult,
    )


def _registered(store: Store, tmp_path: Path, **kw: object) -> Agent:
    a = scout(tmp_path, tenant=f"reg-{uuid.uuid4().hex[:10]}", **kw)
    register_agent(store.tenant(a.tenant), a)
    return a


async def test_a_decision_the_model_records_survives_three_consolidations(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, tmp_path: Path
) -> None:
    env, agent = temporal_dev, _registered(store, tmp_path, decisions=True)
    ts = store.tenant(agent.tenant)
    text = "Use Postgres 16 for the orders service."
    async with worker(env.client, store, [agent], osim) as (queue, _):
        told = await wake(
            env.client, agent.runtime(), message(_remember("db.engine", text, "LTS")), queue
        )
        ((decision),) = ts.live_decisions(agent.name, datetime.now(UTC) + timedelta(hours=1))
        rounds = []
        for n in range(3):
            _old_session(ts, agent.name, n)
            rounds.append(await _round(env, agent, queue))
        later = await wake(env.client, agent.runtime(), message("Which database?"), queue)
    assert told.status == later.status == "done" and told.tool_calls == 1
    assert decision.source == "tool" and decision.key == "db.engine"
    assert decision.text == text and decision.rationale == "LTS"
    call = next(e for e in ts.events(agent.name) if e.tool_name == REMEMBER_DECISION)
    assert decision.decision_id == f"DEC-{call.id}" and decision.source_event == call.id
    result = next(e for e in ts.events(agent.name) if e.kind == "tool_result")
    assert result.text.startswith(f"Recorded {decision.decision_id} under key 'db.engine'")
    # Each round summarised history (and retired it) ...
    assert all(r.accepted >= 1 for r in rounds), rounds
    assert len({s.id for s in ts.summaries(agent.name)}) >= 1
    # ... and the decision is still live, and in the window after the third.
    assert [d.decision_id for d in ts.all_decisions(agent.name) if d.source == "tool"] == [
        decision.decision_id
    ]
    # Its key and rationale with it: the model can record a successor on the key.
    line = f"[{decision.decision_id}] db.engine: {text} (why: LTS)"
    assert line in _window(ts, later.wake_id)


async def test_recording_on_a_key_again_supersedes_the_decision_before(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, tmp_path: Path
) -> None:
    env, agent = temporal_dev, _registered(store, tmp_path, decisions=True)
    ts = store.tenant(agent.tenant)
    async with worker(env.client, store, [agent], osim) as (queue, _):
        await wake(
            env.client, agent.runtime(), message(_remember("db.engine", "Use PG 15.")), queue
        )
        await wake(
            env.client, agent.runtime(), message(_remember("db.engine", "Use PG 16.")), queue
        )
        last = await wake(env.client, agent.runtime(), message("Which database?"), queue)
    old, new = sorted(ts.all_decisions(agent.name), key=lambda d: d.source_event or 0)
    assert old.superseded_by == new.decision_id and new.superseded_by is None
    replaced = [e.text for e in ts.events(agent.name) if e.kind == "tool_result"][-1]
    assert f"it replaces {old.decision_id}" in replaced
    window = _window(ts, last.wake_id)
    assert f"[{new.decision_id}] db.engine: Use PG 16." in window
    assert f"[{old.decision_id}]" not in window


def test_the_tool_is_offered_only_to_agents_that_opt_in(tmp_path: Path) -> None:
    plain = scout(tmp_path, tenant="t")
    opted = dataclasses.replace(plain, decisions=True)
    names = [t["name"] for t in opted.spec()["tools"]]
    assert REMEMBER_DECISION in names
    assert REMEMBER_DECISION not in [t["name"] for t in plain.spec()["tools"]]
    # An agent that does not opt in keeps its spec, and so its cached prefix, as ever.
    assert [n for n in names if n != REMEMBER_DECISION] == [
        t["name"] for t in plain.spec()["tools"]
    ]
    assert dataclasses.replace(opted, decisions=False).spec() == plain.spec()


async def test_a_sessions_stated_constraint_is_promoted_as_it_ends(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, ts = temporal_dev, store.tenant(agent.tenant)
    rule = "Never deploy the billing service on Fridays."
    async with worker(env.client, store, [agent], osim) as (queue, _):
        said = await wake(env.client, agent.runtime(), message(rule), queue)
        assert ts.all_decisions(agent.name) == []  # nothing consolidated yet
        ended = await wake(env.client, agent.runtime(), message("/handoff done for today"), queue)
    assert said.status == "done" and ended.status == "handoff"
    turn = next(e for e in ts.events(agent.name) if e.kind == "turn" and e.text == rule)
    ((promoted),) = ts.all_decisions(agent.name)
    assert (promoted.decision_id, promoted.text) == (f"LB-{turn.id}", rule)
    assert promoted.source == "consolidation" and promoted.source_event == turn.id
    note = ts.latest_handoff(agent.name)
    assert note is not None and promoted.decision_id in note.body.decisions


async def test_the_next_compile_names_a_decision_that_expired(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, ts = temporal_dev, store.tenant(agent.tenant)
    lapsed = datetime.now(UTC) - timedelta(days=1)  # long past by any compile's clock
    gone = ts.record_decision(
        agent.name, key="freeze", text="Freeze merges this week.", expires_at=lapsed
    )
    kept = ts.record_decision(agent.name, key="db.engine", text="Use PG 16.")
    async with worker(env.client, store, [agent], osim) as (queue, _):
        first = await wake(env.client, agent.runtime(), message("What holds?"), queue)
        second = await wake(env.client, agent.runtime(), message("And now?"), queue)
    (compiled, *_) = ts.compiles(first.wake_id)
    entry = ledger_of(ts, compiled).decisions[EXPIRED_ENTRY]
    assert entry.startswith(f"{gone.decision_id} (key freeze) expired ")
    assert kept.decision_id not in entry
    assert all(EXPIRED_ENTRY not in ledger_of(ts, c).decisions for c in ts.compiles(second.wake_id))
    expired = ts.decision(agent.name, gone.decision_id)
    assert expired.status(datetime.now(UTC)) == "expired"
    assert expired.retired_by == f"expired@{compiled.step_key}"
    assert f"[{kept.decision_id}]" in _window(ts, first.wake_id)
    assert f"[{gone.decision_id}]" not in _window(ts, first.wake_id)
    # The retirement is knowledge of the compile's revision: a recompile reads the same.
    assert recompile(ts, compiled).identical
