"""Documents on the real path: a chunk found by its heading in a wake's compiled window,
and a changed file's old chunks never again.

Two ways in, each live: ``Agent(documents=[...])`` registered as a worker registers it (the
public API), and ``wakeful docs add`` run as a process (the CLI). Then wakes on the
Temporal dev server (real Postgres, the real Anthropic SDK against the simulator, an
in-memory vector index the compile activity fills lazily) bring the chunk into the window
as ``doc:`` evidence; after the file changes, the next wake of the same worker brings the
new text and never the old chunk, whose point the index still holds.
"""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import Providers, message
from tests.ops.cli_env import clear_wakeful_env, shell
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.layer_budget import LayerBudget
from wakeful.compiler.ledger import INCLUDED, Ledger
from wakeful.contracts import WakeResult
from wakeful.errors import ConfigError
from wakeful.replay import recompile
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.store import Store
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker

OLD = "The checkout deploy key rotates every Tuesday at noon."
NEW = "The checkout deploy key rotates on the first Monday of each month."
RUNBOOK = "# Runbook\n\nGeneral notes on running checkout.\n\n## Key rotation\n\n{}\n\n## Rollback\n\nRun the rollback job from the release page.\n"  # noqa: E501
QUESTION = "What does the runbook say about key rotation?"


@asynccontextmanager
async def serving(
    env: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> AsyncIterator[Callable[[str], Awaitable[WakeResult]]]:
    """A worker for ``agent`` with one in-memory vector index (filled from Postgres by the
    compile activity, kept across wakes); yields ``wake(text)``, a wake in a new session."""
    key = uuid.uuid4().hex
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=Providers(sim, key),
        counter=BpeCounter(),
        vectors=MemoryVectorStore(),
    )
    queue = f"q-{uuid.uuid4().hex[:8]}"
    # The model answers without quoting its window (the simulator's planner echoes it):
    # the old text must not come back by any road, the agent's own words included.
    sim.simulator.set_script(Script.parse([{"text": "Noted."}] * 4), scope=key)

    async def one(text: str) -> WakeResult:
        return await wake(env.client, agent.runtime(), message(text, new_session=True), queue)

    try:
        async with build_worker(env.client, deps, queue):
            yield one
    finally:
        await deps.providers.aclose()  # type: ignore[attr-defined]


def doc_evidence(store: Store, agent: Agent, result: WakeResult) -> tuple[list[str], str]:
    """The document chunks a wake's first compile retrieved (``doc:<id>``), each checked
    included by the ledger, and its window's JSON."""
    ts = store.tenant(agent.tenant)
    compiled = ts.compiles(result.wake_id)[0]
    assert compiled.retrieval_hash is not None
    hits = [h for h in load_hits(ts.get_blob(compiled.retrieval_hash)).hits if h.kind == "doc"]
    ledger = Ledger.model_validate_json(ts.get_blob(compiled.ledger_hash))
    rows = {r.block_id: r for r in ledger.rows}
    for h in hits:
        assert rows[f"retrieved:{h.chunk_id}"].status == INCLUDED
    outcome = recompile(ts, compiled)
    assert outcome.identical, outcome.summary()
    return [h.chunk_id for h in hits], json.dumps(json.loads(ts.get_blob(compiled.window_hash)))


def chunk_id_of(store: Store, agent: Agent, text: str) -> str:
    ts = store.tenant(agent.tenant)
    (chunk,) = [c for c in ts.doc_chunks(agent.name, live_only=False) if text in c.text]
    return f"doc:{chunk.id}"


def fresh_agent(docs: list[str]) -> Agent:
    return Agent(
        name="keeper",
        instructions="Answer briefly.",
        tenant=f"docs-{uuid.uuid4().hex[:10]}",
        documents=docs,
    )


async def test_agent_documents_reach_the_window_and_a_change_supersedes(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    runbook = tmp_path / "runbook.md"
    runbook.write_text(RUNBOOK.format(OLD), encoding="utf-8")
    agent = fresh_agent([str(runbook)])
    register_agent(store.tenant(agent.tenant), agent)
    async with serving(temporal_dev, store, sim, agent) as wake_agent:
        one = await wake_agent(QUESTION)
        old = chunk_id_of(store, agent, OLD)
        hits, window = doc_evidence(store, agent, one)
        assert hits[0] == old  # found by its heading, first
        assert OLD in window
        source = f"doc:{runbook.resolve().as_posix()}#Runbook &gt; Key rotation"
        assert f'source=\\"{source}\\"' in window, window[:3000]

        runbook.write_text(RUNBOOK.format(NEW), encoding="utf-8")
        register_agent(store.tenant(agent.tenant), agent)  # as a worker's next start does
        # The old chunk's point is still in the index: Postgres says it no longer holds.
        two = await wake_agent(QUESTION + " Tuesday noon?")
    hits, window = doc_evidence(store, agent, two)
    assert hits[0] == chunk_id_of(store, agent, NEW)
    assert old not in hits and OLD not in window
    assert NEW in window


async def test_cli_documents_reach_the_window_and_a_change_supersedes(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clear_wakeful_env(monkeypatch)
    agent = fresh_agent([])
    register_agent(store.tenant(agent.tenant), agent)
    # Every server named (none embedded is started): `docs` needs only Postgres.
    env = {
        "WAKEFUL_DATABASE_URL": pg_url,
        "WAKEFUL_TEMPORAL_ADDRESS": temporal_dev.client.service_client.config.target_host,
        "WAKEFUL_QDRANT_URL": "http://127.0.0.1:9",
        "WAKEFUL_TENANT": agent.tenant,
        "WAKEFUL_STATE_DIR": str(tmp_path / "state"),
    }
    (tmp_path / "state").mkdir()
    (tmp_path / "runbook.md").write_text(RUNBOOK.format(OLD), encoding="utf-8")

    def docs_add() -> str:
        done = shell(f"wakeful docs add {shlex.quote(agent.name)} runbook.md", env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert docs_add().startswith("added runbook.md")
    old = chunk_id_of(store, agent, OLD)
    async with serving(temporal_dev, store, sim, agent) as wake_agent:
        one = await wake_agent(QUESTION)  # indexes the chunks, then finds one
        hits, window = doc_evidence(store, agent, one)
        assert hits[0] == old and OLD in window
        assert 'source=\\"doc:runbook.md#Runbook &gt; Key rotation\\"' in window

        (tmp_path / "runbook.md").write_text(RUNBOOK.format(NEW), encoding="utf-8")
        assert docs_add().startswith("replaced runbook.md")
        two = await wake_agent(QUESTION + " Tuesday noon?")
    hits, window = doc_evidence(store, agent, two)
    assert hits[0] == chunk_id_of(store, agent, NEW)
    assert old not in hits and OLD not in window and NEW in window


async def test_the_documents_layer_declared_on_the_agent_is_capped_and_named_in_the_ledger(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    runbook = tmp_path / "runbook.md"
    runbook.write_text(RUNBOOK.format(OLD), encoding="utf-8")
    agent = replace(
        fresh_agent([str(runbook)]),
        layers={"documents": LayerBudget(priority=3, budget_share=0.0001)},
    )
    assert agent.spec()["layers"] == {"documents": {"priority": 3, "budget_share": 0.0001}}
    register_agent(store.tenant(agent.tenant), agent)
    async with serving(temporal_dev, store, sim, agent) as wake_agent:
        one = await wake_agent(QUESTION)
    ts = store.tenant(agent.tenant)
    compiled = ts.compiles(one.wake_id)[0]
    ledger = Ledger.model_validate_json(ts.get_blob(compiled.ledger_hash))
    rows = [r for r in ledger.rows if r.source.startswith("doc:")]
    assert rows and all(
        (r.reason, r.rule) == ("over_layer_share", "layers.documents.budget_share") for r in rows
    )
    account = ledger.decisions["layers.documents"]
    assert account.startswith("priority 3, budget_share 0.0001; asked ")
    assert account.endswith(f"got 0 in 0; {len(rows)} over its share")
    assert OLD not in json.dumps(json.loads(ts.get_blob(compiled.window_hash)))
    outcome = recompile(ts, compiled)  # a replay stamps the stored hits the same way
    assert outcome.identical, outcome.summary()


def test_an_agent_naming_a_layer_that_is_not_built_in_is_one_line() -> None:
    with pytest.raises(
        ConfigError, match="layers names 'code_map'; the built-in layers are documents"
    ):
        replace(fresh_agent([]), layers={"code_map": LayerBudget(priority=1)})
