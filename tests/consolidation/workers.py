"""A Wakeful worker on a fresh task queue for consolidation workflow tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.providers.base import ModelProvider
from wakeful.providers.registry import build_provider
from wakeful.providers.simulator.server import SimulatorServer
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter
from wakeful.worker.worker import build_worker


class Providers:
    """One SDK client per provider name, closed when the test ends (as a worker does)."""

    def __init__(self, sim: SimulatorServer) -> None:
        self.sim, self.key = sim, uuid.uuid4().hex
        self.built: dict[str, ModelProvider] = {}

    def __call__(self, name: str) -> ModelProvider:
        if name not in self.built:
            self.built[name] = build_provider(name, api_key=self.key, base_url=self.sim.base_url)
        return self.built[name]

    async def aclose(self) -> None:
        for provider in self.built.values():
            await provider.aclose()  # type: ignore[attr-defined]


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
