"""A substrate the console reads: real wakes of a demo agent on the Temporal dev server,
embedded Postgres and the provider simulator, recorded once per test session."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import cli_process_env, fresh_demo_agent, message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.contracts import WakeResult
from wakeful.substrate.records import (
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer


@dataclass(frozen=True)
class Recorded:
    """Two wakes of one agent in one session: the second reads what the first cached."""

    ts: TenantStore
    agent: Agent
    wakes: list[WakeResult]
    env: dict[str, str]  # the settings the command line reads this substrate with


@pytest.fixture(scope="session")
async def recorded(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    tmp_path_factory: pytest.TempPathFactory,
    pg_url: str,
) -> AsyncIterator[Recorded]:
    from wakeful.worker.client import wake

    root = tmp_path_factory.mktemp("ui")
    agent = fresh_demo_agent(root, store, "ui")
    ts = store.tenant(agent.tenant)
    registry = AgentRegistry([agent])
    results = []
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        for text in ("list_dir . please", "and list_dir . once more"):
            results.append(await wake(temporal_dev.client, agent.runtime(), message(text), q))
    assert [r.status for r in results] == ["done", "done"], results
    env = cli_process_env(pg_url, temporal_dev, Path(root) / "state", agent.tenant)
    yield Recorded(ts, agent, results, env)


@dataclass(frozen=True)
class Seeded:
    events: list[StoredEvent]
    summary: SummaryRecord


def seed_knowledge(ts: TenantStore, agent: str, session_id: str) -> Seeded:
    """Knowledge of every kind, in every state, written through the repository: a handoff
    note, a summary that retired three events, a decision superseded by another, one
    expired, and a memory replaced by a later one on the same key. Idempotent (step keys)."""
    now = datetime.now(UTC)
    events = ts.append_events(agent, [
        EventIn(step_key=f"{agent}:seed:e{n}", kind="turn", role="user", text=f"fact {n}",
                session_id=session_id, event_time=now - timedelta(hours=2))
        for n in range(4)
    ])  # fmt: skip
    ts.write_handoff(HandoffRecord(
        agent=agent, session_id=session_id, wake_id=f"{agent}:2", step_key=f"{agent}:seed:h",
        body=HandoffBody(goal="ship the report", current_state="drafted",
                         next_actions=["review", "send"]),
    ))  # fmt: skip
    summary = ts.add_summary(
        SummaryRecord(agent=agent, step_key=f"{agent}:seed:s", level=1, span_start=events[0].id,
                      span_end=events[2].id, text="three facts"),
        retire_span=True, at=now,
    )  # fmt: skip
    ts.register_decision(DecisionRecord(decision_id="D1", agent=agent, text="use tabs",
                                        source_event=events[0].id))  # fmt: skip
    ts.register_decision(DecisionRecord(decision_id="D2", agent=agent, text="use spaces"))
    ts.supersede_decision(agent, "D1", "D2")
    ts.register_decision(DecisionRecord(decision_id="D3", agent=agent, text="freeze on Friday",
                                        expires_at=now - timedelta(minutes=1)))  # fmt: skip
    ts.remember(MemoryRecord(agent=agent, step_key=f"{agent}:seed:m1", key="owner",
                             text="Ann owns it", source=f"event:{events[1].id}",
                             captured_at=now - timedelta(hours=1)))  # fmt: skip
    ts.remember(MemoryRecord(agent=agent, step_key=f"{agent}:seed:m2", key="owner",
                             text="Bo owns it", source=f"event:{events[3].id}",
                             verification="verified", captured_at=now))  # fmt: skip
    return Seeded(events, summary)
