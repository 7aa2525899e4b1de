"""Fixtures for consolidation tests: an agent in a fresh tenant, the provider simulator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from wakeful.agents import Agent
from wakeful.substrate.store import TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.serve import register_agent


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatorServer]:
    with SimulatorServer() as server:
        yield server


@pytest.fixture
def ops(tenant: TenantStore) -> Agent:
    """The agent "ops", registered in a fresh tenant."""
    agent = Agent(name="ops", instructions="Keep services healthy.", tenant=tenant.name)
    register_agent(tenant, agent)
    return agent
