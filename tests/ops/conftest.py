"""Fixtures for the operations tests: an agent in a fresh tenant, an ingress in front of it,
the CLI's settings, a stock ``wakeful worker`` process the CLI tests share and a Postgres a
test may stop.

The ingress runs in-process (httpx's ASGI transport) against the session's real Postgres and
the real Temporal dev server; a worker joins only in the tests that need a wake to run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import fresh_demo_agent
from tests.ops.cli_env import (
    STOCK_AGENTS,
    clear_wakeful_env,
    cli_worker,
    make_env,
    simulated_worker_env,
    worker_command,
)
from tests.ops.ingress_setup import LiveIngress, MakeIngress, served
from tests.ops.pg_stack import stoppable_postgres
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.ingress import create_app
from wakeful.worker.settings import Settings
from wakeful.worker.stack import EmbeddedStack


@pytest.fixture
def agent(tmp_path: Path, store: Store) -> Agent:
    """A fresh tenant and agent per test, with the demo's real file tools."""
    return fresh_demo_agent(tmp_path, store, "ops")


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


@pytest.fixture
async def serve_ingress(
    temporal_dev: WorkflowEnvironment, store: Store
) -> AsyncIterator[Callable[..., Awaitable[httpx.AsyncClient]]]:
    """Serve an ingress for given settings with uvicorn on a real socket, as ``wakeful
    ingress serve`` does (keyword arguments: ``server_config``'s); answers a client of it.
    Every server is stopped after the test."""

    async def client_factory() -> Client:
        return temporal_dev.client

    async with AsyncExitStack() as stack:

        async def serve(settings: Settings, **config: Any) -> httpx.AsyncClient:
            app = create_app(settings, client_factory, store)
            url = await stack.enter_async_context(served(app, **config))
            return await stack.enter_async_context(httpx.AsyncClient(base_url=url))

        yield serve


@pytest.fixture
def live(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> LiveIngress:
    """The agent on the live stack, with ingresses and a worker to deliver and wake it."""
    return LiveIngress(temporal_dev, store, sim, agent, make_ingress)


@pytest.fixture
def env(
    pg_url: str, temporal_dev: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Explicit settings for one CLI session: external servers only, a fresh tenant."""
    return make_env(
        pg_url, temporal_dev.client.service_client.config.target_host, tmp_path, monkeypatch
    )


@pytest.fixture
def own_postgres(
    temporal_dev: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> Iterator[EmbeddedStack]:
    """A Postgres of this test's own, so it can be stopped (the session's is shared; Temporal
    is the session's dev server, not embedded)."""
    clear_wakeful_env(monkeypatch)
    with stoppable_postgres(temporal_dev.client.service_client.config.target_host) as stack:
        yield stack


@pytest.fixture(scope="package")
def stock_worker(
    pg_url: str,
    temporal_dev: WorkflowEnvironment,
    sim: SimulatorServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, str]]:
    """``wakeful worker`` serving ``tests.ops.cli_agents:stock`` (``clerk``, ``tally`` and
    ``gatekeeper`` on Anthropic's API, ``scribe`` on OpenAI's Responses API), all answered
    by the simulator, for the tests that need no worker of their own; stopped with SIGTERM
    after them. Answers the CLI's settings for it (one tenant, task queue and Edge shard):
    each test wakes agents no other test sharing it wakes."""
    address = temporal_dev.client.service_client.config.target_host
    state: Path = tmp_path_factory.mktemp("stock-worker")
    with pytest.MonkeyPatch.context() as monkeypatch:
        env = simulated_worker_env(make_env(pg_url, address, state, monkeypatch), sim)
        env |= {"OPENAI_API_KEY": env["ANTHROPIC_API_KEY"], "OPENAI_BASE_URL": sim.openai_base_url}
        with cli_worker(worker_command(STOCK_AGENTS), env):
            yield env
