"""Fixtures for the operations tests: an agent in a fresh tenant, and an ingress in front of it.

The ingress runs in-process (httpx's ASGI transport) against the session's real Postgres and
the real Temporal dev server; a worker joins only in the tests that need a wake to run.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from wakeful.agents import Agent
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.ingress import create_app
from wakeful.worker.serve import register_agent
from wakeful.worker.settings import Settings

SECRET = "whsec-default-0123456789"
OTHER_TENANT = "acme"
OTHER_SECRET = "whsec-acme-9876543210"

MakeIngress = Callable[..., httpx.AsyncClient]


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatorServer]:
    with SimulatorServer() as server:
        yield server


@pytest.fixture
def agent(tmp_path: Path, store: Store) -> Agent:
    """A fresh tenant and agent per test, with the demo's real file tools."""
    a = Agent(
        name="scout",
        instructions=INSTRUCTIONS,
        tools=DEMO_TOOLS,
        workdir=str(seed_workspace(tmp_path / "ws")),
        tenant=f"ops-{uuid.uuid4().hex[:10]}",
    )
    register_agent(store.tenant(a.tenant), a)
    return a


def ingress_settings(agent: Agent, **overrides: Any) -> Settings:
    """The agent's tenant is the default tenant; ``acme`` is another tenant with its own secret."""
    values: dict[str, Any] = {
        "tenant": agent.tenant,
        "webhook_secret": SECRET,
        "webhook_tenant_secrets": {OTHER_TENANT: OTHER_SECRET},
        "webhook_max_body_bytes": 4096,
        "task_queue": f"q-{uuid.uuid4().hex[:8]}",
    }
    return Settings(**(values | overrides))


@pytest.fixture
async def make_ingress(
    temporal_dev: WorkflowEnvironment, store: Store
) -> AsyncIterator[MakeIngress]:
    """Build an ingress client for given settings; every client is closed after the test."""
    opened: list[httpx.AsyncClient] = []

    async def client_factory() -> Client:
        return temporal_dev.client

    def make(settings: Settings, **kwargs: Any) -> httpx.AsyncClient:
        app = create_app(settings, client_factory, store, **kwargs)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://ingress.test"
        )
        opened.append(client)
        return client

    yield make
    for client in opened:
        await client.aclose()
