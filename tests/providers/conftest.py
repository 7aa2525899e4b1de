"""Fixtures for provider tests: one loopback simulator per session, one scope per test.

Each test gets its own API key, and the simulator keeps caches, script cursors and call
logs per key, so tests share a server without seeing each other's state. Time is a
:class:`ManualClock`: TTL tests advance it instead of sleeping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import pytest

from wakeful.testing.simulator import ManualClock, SimulatorServer
from wakeful.testing.simulator.tokens import count_tokens


@pytest.fixture(scope="session")
def sim_clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="session")
def sim_server(sim_clock: ManualClock) -> Iterator[SimulatorServer]:
    with SimulatorServer(clock=sim_clock) as server:
        yield server


@pytest.fixture
def sim_key(request: pytest.FixtureRequest) -> str:
    """An API key unique to the test: the simulator's isolation scope."""
    return "sk-test-" + hashlib.blake2b(request.node.nodeid.encode(), digest_size=8).hexdigest()


def filler(min_tokens: int, seed: str = "doc") -> str:
    """Deterministic prose of at least ``min_tokens`` o200k tokens."""
    words = [f"{seed}{i % 97} lorem{i % 13} ipsum" for i in range(min_tokens // 5 + 1)]
    text = " ".join(words)
    while count_tokens(text) < min_tokens:
        text += " more filler words"
    return text


@pytest.fixture
def text_of() -> Callable[..., str]:
    """``text_of(n, seed)``: deterministic text of at least ``n`` tokens."""
    return filler
