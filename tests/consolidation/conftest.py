"""Fixtures for consolidation tests: an agent in a fresh tenant (the provider simulator,
``sim``, is the session's, from tests/conftest.py)."""

from __future__ import annotations

import pytest

from wakeful.agents import Agent
from wakeful.substrate.store import TenantStore
from wakeful.worker.serve import register_agent


@pytest.fixture
def ops(tenant: TenantStore) -> Agent:
    """The agent "ops", registered in a fresh tenant."""
    agent = Agent(name="ops", instructions="Keep services healthy.", tenant=tenant.name)
    register_agent(tenant, agent)
    return agent
