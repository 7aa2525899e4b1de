"""Retrieval on the real path: a fact from an earlier session reaches a later window.

A worker with a Qdrant Edge shard runs two wakes in two sessions on the Temporal dev server
(real Postgres, the real Anthropic SDK against the simulator). The second session's window
holds the first session's fact as retrieved evidence - indexed lazily by the compile
activity, never as a replayed transcript - and ``recompile`` reproduces it byte for byte.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import Providers, message
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.ledger import INCLUDED, Ledger
from wakeful.replay import recompile
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.store import Store
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.worker import build_worker

FACT = "Remember this: the deploy key for checkout rotates every Tuesday at noon."
QUESTION = "When does the deploy key for checkout rotate?"
LAST = "Thanks. Is the checkout deploy key rotation documented anywhere else?"


async def test_an_old_fact_is_retrieved_into_a_new_session_and_replays(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    tmp_path: Path,
) -> None:
    key = uuid.uuid4().hex
    vectors = EdgeVectorStore(tmp_path / "qdrant")
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=Providers(sim, key),
        counter=BpeCounter(),
        vectors=vectors,
    )
    queue = f"q-{uuid.uuid4().hex[:8]}"
    rt = agent.runtime()
    try:
        async with build_worker(temporal_dev.client, deps, queue):
            one = await wake(temporal_dev.client, rt, message(FACT), queue)
            # The handoff note that opens the next session quotes this wake's ask.
            await wake(temporal_dev.client, rt, message(LAST), queue)
            two = await wake(temporal_dev.client, rt, message(QUESTION, new_session=True), queue)
    finally:
        vectors.close()
        await deps.providers.aclose()  # type: ignore[attr-defined]
    assert one.session_id != two.session_id

    ts = store.tenant(agent.tenant)
    fact = next(e for e in ts.events(agent.name, wake_id=one.wake_id) if e.text == FACT)
    asked = next(e for e in ts.events(agent.name, wake_id=two.wake_id) if e.text == QUESTION)
    (compiled,) = ts.compiles(two.wake_id)
    assert compiled.retrieval_hash is not None
    stored = load_hits(ts.get_blob(compiled.retrieval_hash))
    assert QUESTION in stored.query
    hit_ids = [h.chunk_id for h in stored.hits]
    assert f"ev:{fact.id}" in hit_ids  # indexed by the compile activity, then retrieved
    assert f"ev:{asked.id}" not in hit_ids  # already in the window as the current ask
    last = next(e for e in ts.events(agent.name) if e.text == LAST)
    assert f"ev:{last.id}" not in hit_ids  # already in the window, quoted by the handoff note

    ledger = Ledger.model_validate_json(ts.get_blob(compiled.ledger_hash))
    rows = {r.block_id: r for r in ledger.rows}
    assert rows[f"retrieved:ev:{fact.id}"].status == INCLUDED
    window = json.loads(ts.get_blob(compiled.window_hash))
    evidence = json.dumps(window["messages"])
    assert "the deploy key for checkout rotates every Tuesday" in evidence
    assert '<evidence kind=\\"conversation\\">' in evidence
    # Not a replayed transcript: session one's turn is evidence, not a conversation turn.
    content = [c for m in window["messages"] for c in m["content"]]
    assert not [c for c in content if c.get("text") == FACT]

    outcome = recompile(ts, compiled)
    assert outcome.identical, outcome.summary()
    assert outcome.snapshot_identical
