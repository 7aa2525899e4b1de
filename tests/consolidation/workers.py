"""A Wakeful worker on a fresh task queue for consolidation workflow tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client

from tests.e2e.harness import Providers
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.worker import build_worker


def deps_for(store: Store, agents: list[Agent], providers: Providers) -> ActivityDeps:
    return ActivityDeps(
        store=store, agents=AgentRegistry(agents), providers=providers, counter=BpeCounter()
    )


@asynccontextmanager
async def running_worker(
    client: Client, store: Store, agents: list[Agent], sim: SimulatorServer
) -> AsyncIterator[str]:
    """Every Wakeful workflow and activity on a fresh queue; yields the queue."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    providers = Providers(sim)
    try:
        async with build_worker(client, deps_for(store, agents, providers), queue):
            yield queue
    finally:
        await providers.aclose()
