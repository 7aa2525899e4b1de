"""Fixtures for end-to-end wakes: the simulator and a test agent in a fresh tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wakeful.agents import Agent
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.serve import register_agent


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
        tenant=f"e2e-{uuid.uuid4().hex[:10]}",
    )
    register_agent(store.tenant(a.tenant), a)
    return a
