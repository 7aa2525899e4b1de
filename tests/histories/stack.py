"""The servers a history recording runs on (``record.py``, ``record_local_timeout.py``,
``record_intent_spend.py``), and how a recording ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.servers import embedded_postgres, temporal_dev_server
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


async def stop_and_save(client: Client, agent: Agent, path: Path) -> None:
    """Stop the agent's workflow, wait until it completes, and write its history to ``path``."""
    handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
    await handle.signal(AgentWorkflow.stop)
    await handle.result()
    history = await handle.fetch_history()
    path.write_text(history.to_json() + "\n")
