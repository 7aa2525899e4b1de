"""Fixtures for orchestration tests: a private simulator (tests here move its clock) and a
fresh agent in a fresh tenant with the demo's real file tools."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.orchestration.helpers import scout
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.serve import register_agent


@pytest.fixture(scope="module")
def osim() -> Iterator[SimulatorServer]:
    with SimulatorServer() as server:
        yield server


@pytest.fixture
def agent(tmp_path: Path, store: Store) -> Agent:
    a = scout(tmp_path, tenant=f"orch-{uuid.uuid4().hex[:10]}")
    register_agent(store.tenant(a.tenant), a)
    return a
