"""Per-user memory on the real path: what a wake for one user writes never reaches another's.

A worker with a Qdrant Edge shard (compiles retrieve) serves the demo agent with the
built-in ``remember_decision`` tool on the Temporal dev server (real Postgres, the real SDK
against the simulator). Wakes go through the public :class:`~wakeful.worker.client.Client`
with ``user=``. Alice records a decision and says something only she should get back; Bob,
in the same session and then in a new one asking about it, sees none of it (not in the raw
tail, not as a decision, not as retrieved evidence); Alice's own later wake does; a wake
without a user reads agent-wide memory only, and names its scope ``agent``. A compile of a
user's wake replays byte for byte (its scope is kept with the compile).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import scout, worker
from wakeful.activities.compile_stages import MEMORY_SCOPE_ENTRY
from wakeful.agents import Agent
from wakeful.compiler.ledger import Ledger
from wakeful.decisions import REMEMBER_DECISION
from wakeful.replay import recompile
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client
from wakeful.worker.serve import register_agent

DECISION = "Send the monthly invoices in Norwegian krone."
SECRET = "My locker combination at the Oslo office is 4711 and the locker is blue."
QUESTION = "What is the locker combination at the Oslo office and which locker is it?"


def _remember(key: str, text: str) -> str:
    """A message the simulator's planner answers by calling remember_decision."""
    return f"{REMEMBER_DECISION} {json.dumps({'key': key, 'text': text})}"


def _windows(ts: TenantStore, wake_id: str) -> str:
    """Every window the wake's model calls were sent, as one text."""
    return "\n".join(ts.get_blob(c.window_hash) for c in ts.compiles(wake_id))


def _scope(ts: TenantStore, wake_id: str) -> str:
    (first, *_) = ts.compiles(wake_id)
    return Ledger.model_validate_json(ts.get_blob(first.ledger_hash)).decisions[MEMORY_SCOPE_ENTRY]


async def test_a_users_memory_reaches_her_own_wakes_and_no_one_elses(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    agent: Agent = scout(tmp_path, tenant=f"users-{uuid.uuid4().hex[:10]}", decisions=True)
    register_agent(store.tenant(agent.tenant), agent)
    ts = store.tenant(agent.tenant)
    vectors = EdgeVectorStore(tmp_path / "qdrant")
    try:
        async with worker(temporal_dev.client, store, [agent], sim, vectors=vectors) as (q, _):
            client = Client(temporal_dev.client, task_queue=q)
            told = await client.wake(agent, _remember("invoice.currency", DECISION), user="alice")
            said = await client.wake(agent, SECRET, user="alice")
            # Bob in Alice's session, then in a session of his own asking about her words.
            bob_same = await client.wake(agent, "Hello, what do you know so far?", user="bob")
            bob_new = await client.wake(agent, QUESTION, user="bob", new_session=True)
            alice_new = await client.wake(agent, QUESTION, user="alice", new_session=True)
            agent_wide = await client.wake(agent, QUESTION, new_session=True)
    finally:
        vectors.close()
    results = (told, said, bob_same, bob_new, alice_new, agent_wide)
    assert [r.status for r in results] == ["done"] * 6, results
    users = {w.number: w.user_id for w in ts.wakes(agent.name)}
    assert [users[r.number] for r in results] == ["alice", "alice", "bob", "bob", "alice", None]
    assert told.tool_calls == 1

    # What Alice's wakes wrote is stored as hers: the decision and every event.
    (decision,) = [d for d in ts.all_decisions(agent.name) if d.source == "tool"]
    assert decision.user_id == "alice" and decision.text == DECISION
    for r in (told, said):
        assert {e.user_id for e in ts.events(agent.name, wake_id=r.wake_id)} == {"alice"}
    secret_event = next(e for e in ts.events(agent.name, wake_id=said.wake_id) if e.text == SECRET)

    # Bob never sees any of it: not in the session's raw tail, not as a decision, not as
    # a retrieved turn, in any window his wakes were sent.
    for r in (bob_same, bob_new):
        seen = _windows(ts, r.wake_id)
        assert "4711" not in seen and "krone" not in seen, r.wake_id
        assert _scope(ts, r.wake_id) == "user bob"
    (bob_compile, *_) = ts.compiles(bob_new.wake_id)
    assert bob_compile.retrieval_hash is not None  # it searched, and found none of hers
    bob_hits = [h.chunk_id for h in load_hits(ts.get_blob(bob_compile.retrieval_hash)).hits]
    assert f"ev:{secret_event.id}" not in bob_hits

    # Alice's own later wake, in a new session, has both.
    mine = _windows(ts, alice_new.wake_id)
    assert "4711" in mine and f"[{decision.decision_id}] invoice.currency: {DECISION}" in mine
    assert _scope(ts, alice_new.wake_id) == "user alice"

    # A wake without a user is the agent's: agent-wide memory only, scope "agent".
    assert "4711" not in _windows(ts, agent_wide.wake_id)
    assert "krone" not in _windows(ts, agent_wide.wake_id)
    assert _scope(ts, agent_wide.wake_id) == "agent"

    # The scope is kept with the compile: a replay reads the substrate as the wake did.
    for r in (bob_new, alice_new):
        for compiled in ts.compiles(r.wake_id):
            outcome = recompile(ts, compiled)
            assert outcome.identical, outcome.summary()


async def test_a_wake_without_a_user_reads_the_agents_history_as_before(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    agent = scout(tmp_path, tenant=f"users-{uuid.uuid4().hex[:10]}")
    register_agent(store.tenant(agent.tenant), agent)
    ts = store.tenant(agent.tenant)
    async with worker(temporal_dev.client, store, [agent], sim) as (q, _):
        client = Client(temporal_dev.client, task_queue=q)
        first = await client.wake(agent, SECRET)
        second = await client.wake(agent, "And what did I tell you just now?")
    assert first.status == second.status == "done"
    assert first.session_id == second.session_id
    # Stored agent-wide, and the next wake of the session has it in its raw tail.
    assert {e.user_id for e in ts.events(agent.name)} == {None}
    assert "4711" in _windows(ts, second.wake_id)
    assert _scope(ts, second.wake_id) == "agent"
    # Its compile's spec is the agent's spec as before: no scope key is added.
    (compiled, *_) = ts.compiles(second.wake_id)
    assert "user" not in json.loads(ts.get_blob(compiled.spec_hash or ""))
