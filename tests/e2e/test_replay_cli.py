"""`wakeful replay` after the substrate moved on: a past window recompiles byte-for-byte.

A real wake on the Temporal dev server records its compiles; afterwards the agent's knowledge
changes the way consolidation and later wakes change it — a decision superseded, memories
added (one captured before the wake), one marked stale, a summary that retires the wake's
own turns, a newer handoff note. The compile read the substrate at a knowledge revision, so
``wakeful replay`` still loads the same snapshot and reports an identical window (exit 0).
The same compile without its revision — how compiles were recorded before revisions — reads
today's substrate and is reported as a mismatch (exit 1), naming the snapshot as the cause.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from tests.e2e.harness import cli_process_env, message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.cli.main import app
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    SummaryRecord,
)
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake


def _move_the_substrate_on(ts: TenantStore, agent: str, wake_id: str) -> None:
    at = ts.compiles(wake_id)[0].as_of
    ts.supersede_decision(agent, "D-1", "D-2")
    ts.register_decision(DecisionRecord(decision_id="D-2", agent=agent, text="Ship on Fridays."))
    early = MemoryRecord(
        agent=agent,
        step_key=f"late-{uuid.uuid4().hex}",
        key="deploy-day",
        text="Deploys happen on Tuesdays.",
        source="test",
        captured_at=at - timedelta(hours=1),  # known before the wake, recorded after it
    )
    ts.remember(early)
    (noted,) = [m for m in ts.memories(agent) if m.key == "owner"]
    ts.mark_memories(agent, [noted.id or 0], "stale")
    events = ts.events(agent, wake_id=wake_id)
    ts.add_summary(
        SummaryRecord(
            agent=agent,
            step_key=f"sum-{uuid.uuid4().hex}",
            level=1,
            span_start=events[0].id,
            span_end=events[-1].id,
            text="The agent listed a directory.",
        ),
        retire_span=True,
        at=at - timedelta(minutes=1),  # even a retirement dated before the compile
    )
    ts.write_handoff(
        HandoffRecord(
            agent=agent,
            session_id="later",
            wake_id="later:1",
            step_key=f"note-{uuid.uuid4().hex}",
            body=HandoffBody(goal="later", current_state="moved on"),
        )
    )


@pytest.fixture
def cli_env(
    pg_url: str, temporal_dev: WorkflowEnvironment, agent: Agent, tmp_path: Path
) -> dict[str, str]:
    return cli_process_env(pg_url, temporal_dev, tmp_path / "state", agent.tenant)


async def test_replay_recompiles_a_past_window_after_consolidation(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    cli_env: dict[str, str],
) -> None:
    ts = store.tenant(agent.tenant)
    ts.register_decision(DecisionRecord(decision_id="D-1", agent=agent.name, text="Ship Tuesdays."))
    ts.remember(
        MemoryRecord(
            agent=agent.name,
            step_key=f"owner-{uuid.uuid4().hex}",
            key="owner",
            text="Dana owns the checkout service.",
            source="test",
            captured_at=(await temporal_dev.get_current_time()) - timedelta(days=1),
        )
    )
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, uuid.uuid4().hex) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("list_dir . please"), q)
    assert result.status == "done"
    compiles = ts.compiles(result.wake_id)
    window = json.dumps(json.loads(ts.get_blob(compiles[0].window_hash)))
    assert "Ship Tuesdays." in window and "Dana owns the checkout service." in window
    assert compiles[0].revision is not None and compiles[0].spec_hash is not None

    _move_the_substrate_on(ts, agent.name, result.wake_id)
    assert ts.knowledge_revision(agent.name) > (compiles[-1].revision or 0)

    runner = CliRunner()
    for call in (0, 1):
        args = ["replay", agent.name, "--wake", str(result.number), "--call", str(call)]
        out = runner.invoke(app, [*args, "--json"], env=cli_env)
        assert out.exit_code == 0, (out.stdout, out.stderr)
        outcome = json.loads(out.stdout)
        assert outcome["identical"] and outcome["snapshot_identical"], outcome

    # Without its revision the compile is read against today's substrate: not the same.
    legacy = compiles[0].model_copy(
        update={"step_key": f"{compiles[0].step_key}:legacy", "call_index": 7, "revision": None}
    )
    ts.record_compile(legacy)
    args = ["replay", agent.name, "--wake", str(result.number), "--call", "-1"]
    out = runner.invoke(app, args, env=cli_env)
    assert out.exit_code == 1, (out.stdout, out.stderr)
    assert "MISMATCH" in out.stdout and "the snapshot differs" in out.stdout


def test_a_mismatch_names_the_compiler_version_that_made_the_stored_window() -> None:
    from wakeful.compiler import COMPILER_VERSION
    from wakeful.replay import ReplayOutcome

    def outcome(stored_version: int) -> ReplayOutcome:
        return ReplayOutcome(
            wake_id="scout:1",
            call_index=0,
            identical=False,
            snapshot_identical=True,
            stored_window_hash="a" * 32,
            replayed_window_hash="b" * 32,
            first_difference="e-1 (tokens) 40 -> 57",
            stored_compiler_version=stored_version,
        )

    older = outcome(COMPILER_VERSION - 1).summary()
    assert f"compiled by compiler version {COMPILER_VERSION - 1}" in older
    assert f"this is version {COMPILER_VERSION}" in older
    assert "compiler or policy changed" in outcome(COMPILER_VERSION).summary()
