"""The substrate work of one wake, counted: the statements and transactions a wake of two
model calls and a tool sends to Postgres (each costs the worker a few hundred microseconds
of CPU around its round trip). A change that adds some fails here, and says how many there
are now; lower the bounds when a change removes some."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import open_deps, serving
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.worker import build_worker

# A wake of an agent whose workflow runs already: two compiles, two model calls, a tool.
STATEMENTS_PER_WAKE = 24
TRANSACTIONS_PER_WAKE = 12


@contextmanager
def counting(engine: Engine) -> Iterator[Counter[str]]:
    """The statements ``engine`` sends and the transactions it begins, in the block."""
    counts: Counter[str] = Counter()

    def statement(*_: Any) -> None:
        counts["statements"] += 1

    def begin(*_: Any) -> None:
        counts["transactions"] += 1

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "begin", begin)
    try:
        yield counts
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine, "begin", begin)


def _trigger(text: str) -> Trigger:
    return Trigger(goal=Goal(kind=GoalKind.MESSAGE, text=text), idempotency_key=uuid.uuid4().hex)


async def test_a_wake_sends_a_bounded_number_of_statements(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    client = temporal_dev.client
    registry = AgentRegistry([agent])
    queue = f"stmts-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, registry, sim, uuid.uuid4().hex) as deps:
        # Unstreamed, as the fleet bench calls the model: a stream writes its previews as
        # the reply arrives, as many as its timing makes.
        deps.stream_model_calls = False
        async with serving(build_worker(client, deps, queue)):
            first = await wake(
                client, agent.runtime(), _trigger("read_file README.md and sum up."), queue
            )
            with counting(store.engine) as counts:
                second = await wake(
                    client,
                    agent.runtime(),
                    _trigger("read_file README.md and sum it up again."),
                    queue,
                )
    assert (first.status, second.status) == ("done", "done")
    assert (second.model_calls, second.tool_calls) == (2, 1)
    assert counts["statements"] <= STATEMENTS_PER_WAKE, counts
    assert counts["transactions"] <= TRANSACTIONS_PER_WAKE, counts
