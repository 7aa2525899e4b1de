"""A substrate the console reads: real wakes of a demo agent on the Temporal dev server,
embedded Postgres and the provider simulator, recorded once per test session."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.conftest import sim  # noqa: F401  (the session's simulator fixture)
from tests.e2e.harness import message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.contracts import WakeResult
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.providers.simulator.server import SimulatorServer
from wakeful.substrate.store import Store, TenantStore
from wakeful.worker.serve import register_agent


@dataclass(frozen=True)
class Recorded:
    """Two wakes of one agent in one session: the second reads what the first cached."""

    ts: TenantStore
    agent: Agent
    wakes: list[WakeResult]
    env: dict[str, str]  # the settings the command line reads this substrate with


@pytest.fixture(scope="session")
async def recorded(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
    pg_url: str,
) -> AsyncIterator[Recorded]:
    from wakeful.worker.client import wake

    root = tmp_path_factory.mktemp("ui")
    agent = Agent(
        name="scout",
        instructions=INSTRUCTIONS,
        tools=DEMO_TOOLS,
        workdir=str(seed_workspace(root / "ws")),
        tenant=f"ui-{uuid.uuid4().hex[:10]}",
    )
    ts = store.tenant(agent.tenant)
    register_agent(ts, agent)
    registry = AgentRegistry([agent])
    results = []
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        for text in ("list_dir . please", "and list_dir . once more"):
            results.append(await wake(temporal_dev.client, agent.runtime(), message(text), q))
    assert [r.status for r in results] == ["done", "done"], results
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")} | {
        "WAKEFUL_DATABASE_URL": pg_url,
        "WAKEFUL_TEMPORAL_ADDRESS": temporal_dev.client.service_client.config.target_host,
        "WAKEFUL_QDRANT_URL": "http://127.0.0.1:9",
        "WAKEFUL_STATE_DIR": str(Path(root) / "state"),
        "WAKEFUL_TENANT": agent.tenant,
    }
    yield Recorded(ts, agent, results, env)
