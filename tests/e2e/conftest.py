"""Fixtures for end-to-end wakes: a test agent in a fresh tenant (the simulator, ``sim``, is
the session's, from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import RunWakes, fresh_demo_agent, wakes_in_turn
from wakeful.agents import Agent
from wakeful.contracts import Trigger, WakeResult
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer


@pytest.fixture
def agent(tmp_path: Path, store: Store) -> Agent:
    """A fresh tenant and agent per test, with the demo's real file tools."""
    return fresh_demo_agent(tmp_path, store, "e2e")


@pytest.fixture
def run_wakes(temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer) -> RunWakes:
    """:func:`~tests.e2e.harness.wakes_in_turn` on the dev server, the session's store and
    simulator: ``await run_wakes(agent, trigger, ...)``."""

    async def run(agent: Agent, *triggers: Trigger) -> list[WakeResult]:
        return await wakes_in_turn(temporal_dev.client, store, sim, agent, *triggers)

    return run
