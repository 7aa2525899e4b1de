"""A fleet of workers on one Temporal and one Postgres retrieves as one worker does.

Three workers, each with a Qdrant Edge shard of its own (a shard has one holder), take the
wakes of one agent in turn. Every compile's retrieval sees every indexable event before
its horizon - the same hits one worker finds on the same history - because each shard is a
full replica of the event log, caught up through a cursor of its own before it retrieves.
With one cursor for all shards, a worker coming back to the agent would skip what the
others had indexed meanwhile, and its shard would miss it for good.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import Providers, fresh_demo_agent, message
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.contracts import Trigger
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.store import Store
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.worker import build_worker

FACT = "Remember this: the deploy key for checkout rotates every Tuesday at noon."
LAST = "Thanks. Is the checkout deploy key rotation documented anywhere else?"
ASKS = (
    "When does the deploy key for checkout rotate?",
    "Which day does the checkout deploy key rotate, and at what time?",
)


def triggers() -> list[Trigger]:
    # The handoff note opening a new session quotes the last ask of the one before: the fact
    # is not that ask, so it can only reach a later session's window as retrieved evidence.
    return [message(FACT), message(LAST)] + [message(ask, new_session=True) for ask in ASKS]


async def run_on(
    client_env: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    shards: list[Path],
) -> list[list[str]]:
    """Wake ``agent`` once per trigger, wake ``n`` on a worker holding ``shards[n]`` (one
    worker at a time, on one task queue); returns each wake's retrieved hit texts."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    rt = agent.runtime()
    key = uuid.uuid4().hex
    ts = store.tenant(agent.tenant)
    found: list[list[str]] = []
    for trigger, shard in zip(triggers(), shards, strict=True):
        vectors = EdgeVectorStore(shard)
        deps = ActivityDeps(
            store=store,
            agents=AgentRegistry([agent]),
            providers=Providers(sim, key),
            counter=BpeCounter(),
            vectors=vectors,
        )
        try:
            async with build_worker(client_env.client, deps, queue):
                done = await wake(client_env.client, rt, trigger, queue)
        finally:
            vectors.close()
            await deps.providers.aclose()  # type: ignore[attr-defined]
        (compiled, *_) = ts.compiles(done.wake_id)
        stored = (
            load_hits(ts.get_blob(compiled.retrieval_hash)) if compiled.retrieval_hash else None
        )
        found.append([h.text for h in stored.hits] if stored else [])
    return found


async def test_three_workers_retrieve_what_one_worker_retrieves(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    fleet = fresh_demo_agent(tmp_path / "fleet", store, "fleet")
    solo = fresh_demo_agent(tmp_path / "solo", store, "solo")
    on_fleet = await run_on(
        temporal_dev, store, sim, fleet, [tmp_path / f"worker-{n}" for n in (0, 1, 2, 1)]
    )
    on_one = await run_on(temporal_dev, store, sim, solo, [tmp_path / "alone"] * 4)
    # Each new session's wake, on a worker that never compiled the fact, still retrieves it.
    for hits in on_fleet[2:]:
        assert any("rotates every Tuesday at noon" in h for h in hits), hits
    assert on_fleet == on_one
