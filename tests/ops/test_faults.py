"""Faults in the middle of a wake: the wake stalls, resumes when the piece returns, and every
event is recorded exactly once.

* Postgres is stopped while a tool runs (so the tool's result cannot be written) and started
  again on the same data once a write has failed; the wake then completes. This uses its
  own embedded Postgres (the session's is shared with other tests), the real Temporal dev
  server and a real worker.
* Temporal is stopped while a tool runs and started again on the same data (its own dev
  server, SQLite in a temp dir): the worker reconnects and the wake completes.
* The model provider answers 529 (overloaded) and then 503 before recovering: the call is
  retried by Temporal and recorded once.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import (
    message,
    open_deps,
    restart_agent,
    running_worker,
    start_attempts,
)
from wakeful.agents import Agent, AgentRegistry
from wakeful.contracts import CALL_MODEL, RUN_TOOL
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import connect, deliver, wake
from wakeful.worker.serve import register_agent
from wakeful.worker.settings import load_settings
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.worker import build_worker
from wakeful.workflows.agent import workflow_id


async def _until_a_tool_attempt_failed(client: Client, tenant: str, agent: str) -> None:
    """Wait until Temporal reports a failed run_tool attempt (the write of its result)."""
    handle = client.get_workflow_handle(workflow_id(tenant, agent))
    while True:
        described = await handle.describe()
        for pending in described.raw_description.pending_activities:
            if pending.activity_type.name == RUN_TOOL and pending.attempt >= 2:
                return
        await asyncio.sleep(0.2)


async def _gone(pid: int | None) -> None:
    while pid is not None and psutil.pid_exists(pid):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        await asyncio.sleep(0.1)


async def _until(path_glob: str, root: Path) -> None:
    while not list(root.glob(path_glob)):
        await asyncio.sleep(0.1)


def _gated_agent(tenant: str, workdir: Path, markers: Path) -> Agent:
    """The e2e suite's slow tool, with attempts enough to outlast the outage."""
    base = restart_agent(tenant, workdir, markers)
    (tool,) = base.tools
    return replace(base, tools=(replace(tool, max_attempts=50),))


async def test_postgres_stopped_mid_wake_the_wake_resumes_and_records_once(
    temporal_dev: WorkflowEnvironment,
    own_postgres: EmbeddedStack,
    sim: SimulatorServer,
    tmp_path: Path,
) -> None:
    endpoints = own_postgres.up()
    store = Store.connect(endpoints.database_url)
    markers = tmp_path / "markers"
    markers.mkdir()
    agent = _gated_agent(f"fault-{uuid.uuid4().hex[:8]}", tmp_path, markers)
    register_agent(store.tenant(agent.tenant), agent)
    client = temporal_dev.client
    queue = f"q-{uuid.uuid4().hex[:8]}"
    try:
        async with (
            open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps,
            build_worker(client, deps, queue),
        ):
            pending = asyncio.create_task(
                wake(client, agent.runtime(), message("slow_scan the fleet"), queue)
            )
            await asyncio.wait_for(_until("started-*", markers), 60)
            postmaster = own_postgres.status().postgres.pid
            await asyncio.to_thread(own_postgres.down)  # the database goes away mid-wake
            (markers / "release").touch()  # the tool finishes; its result cannot be stored
            await asyncio.wait_for(
                _until_a_tool_attempt_failed(client, agent.tenant, agent.name), 90
            )
            assert not pending.done()  # stalled, not failed
            # Once seen: a restart racing the old postmaster's exit found its socket lock.
            await asyncio.wait_for(_gone(postmaster), 30)
            await asyncio.to_thread(own_postgres.up)  # ...and comes back on the same data
            result = await asyncio.wait_for(pending, 120)
        assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
        ts = store.tenant(agent.tenant)
        events = ts.events(agent.name)
        assert Counter(e.step_key for e in events).most_common(1)[0][1] == 1
        assert [(e.kind, e.role) for e in events] == [
            ("turn", "user"),
            ("turn", "assistant"),
            ("tool_call", "assistant"),
            ("tool_result", "user"),
            ("turn", "assistant"),
        ]
        assert events[3].text == "scan complete: 3 services healthy"
        assert [c.call_index for c in ts.compiles(result.wake_id)] == [0, 1]
        assert [c.call_index for c in ts.model_calls(result.wake_id)] == [0, 1]
        (only,) = ts.wakes(agent.name)
        assert only.status == "done" and ts.latest_handoff(agent.name) is not None
    finally:
        store.close()


async def _until_a_tool_attempt_ended(client: Client, tenant: str, agent: str) -> None:
    """Wait until a run_tool attempt failed: Temporal retries it (a pending attempt >= 2) or
    it failed for good (its failure is in the history)."""
    handle = client.get_workflow_handle(workflow_id(tenant, agent))
    while True:
        described = await handle.describe()
        for pending in described.raw_description.pending_activities:
            if pending.activity_type.name == RUN_TOOL and pending.attempt >= 2:
                return
        history = await handle.fetch_history()
        if any(e.HasField("activity_task_failed_event_attributes") for e in history.events):
            return
        await asyncio.sleep(0.2)


async def test_a_store_outage_uses_up_none_of_a_tools_attempts_and_never_reaches_the_model(
    temporal_dev: WorkflowEnvironment,
    own_postgres: EmbeddedStack,
    sim: SimulatorServer,
    tmp_path: Path,
) -> None:
    """A tool with one attempt ran, and the store was down when its result was to be
    written. That failure was the store's, not the tool's: the call is retried until the
    store is back, without running the tool again, and ends with the tool's own result; the
    transcript never hears of the outage (no driver message, no socket path)."""
    endpoints = own_postgres.up()
    store = Store.connect(endpoints.database_url)
    markers = tmp_path / "markers"
    markers.mkdir()
    base = restart_agent(f"fault-{uuid.uuid4().hex[:8]}", tmp_path, markers)
    agent = replace(base, tools=(replace(base.tools[0], max_attempts=1),))
    register_agent(store.tenant(agent.tenant), agent)
    client = temporal_dev.client
    queue = f"q-{uuid.uuid4().hex[:8]}"
    try:
        async with (
            open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps,
            build_worker(client, deps, queue),
        ):
            pending = asyncio.create_task(
                wake(client, agent.runtime(), message("slow_scan the fleet"), queue)
            )
            await asyncio.wait_for(_until("started-*", markers), 60)
            postmaster = own_postgres.status().postgres.pid
            await asyncio.to_thread(own_postgres.down)
            (markers / "release").touch()  # the tool returns; its result cannot be stored
            await asyncio.wait_for(
                _until_a_tool_attempt_ended(client, agent.tenant, agent.name), 90
            )
            await asyncio.wait_for(_gone(postmaster), 30)
            await asyncio.to_thread(own_postgres.up)
            result = await asyncio.wait_for(pending, 120)
            history = await client.get_workflow_handle(
                workflow_id(agent.tenant, agent.name)
            ).fetch_history()
        assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
        ts = store.tenant(agent.tenant)
        (outcome,) = [e for e in ts.events(agent.name) if e.kind == "tool_result"]
        assert (outcome.is_error, outcome.text) == (False, "scan complete: 3 services healthy")
        transcript = "\n".join(e.text for e in ts.events(agent.name))
        for leak in ("OperationalError", ".s.PGSQL", "failed for good", str(tmp_path)):
            assert leak not in transcript
        assert len(list(markers.glob("started-*"))) == 1  # the tool ran once
        attempts = start_attempts(history, RUN_TOOL)
        assert max(attempts) > agent.tools[0].max_attempts  # the store's failures not counted
    finally:
        store.close()


async def test_model_overloaded_mid_wake_is_retried_and_recorded_once(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    key = uuid.uuid4().hex
    sim.simulator.set_script(
        Script.parse(
            [
                {"text": "Calling list_dir.", "tool_calls": [{"name": "list_dir", "input": {}}]},
                {"error": {"status": 529}},
                {"error": {"status": 503}},
                {"text": "The workspace has a README."},
            ]
        ),
        scope=key,
    )
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, key) as queue:
        result = await wake(temporal_dev.client, agent.runtime(), message("look around"), queue)
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    assert len(sim.simulator.calls(key)) == 2  # the simulator logs the answered calls
    # ...and Temporal shows the second call succeeding on its third attempt.
    history = await temporal_dev.client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and scheduled[e.activity_task_started_event_attributes.scheduled_event_id] == CALL_MODEL
    ]
    assert attempts == [1, 3]
    ts = store.tenant(agent.tenant)
    assert [c.call_index for c in ts.model_calls(result.wake_id)] == [0, 1]
    said = [e.text for e in ts.events(agent.name) if e.kind == "turn" and e.role == "assistant"]
    assert said == ["Calling list_dir.", "The workspace has a README."]


@pytest.fixture
def own_temporal(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[EmbeddedStack]:
    """A Temporal dev server of this test's own (SQLite in a temp dir), so it can be stopped."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
    stack = EmbeddedStack(load_settings(state_dir=tmp_path / "temporal", database_url=pg_url))
    yield stack
    stack.down()


async def test_temporal_stopped_mid_wake_the_wake_resumes_and_records_once(
    own_temporal: EmbeddedStack, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    endpoints = await asyncio.to_thread(own_temporal.up)
    client = await connect(endpoints.temporal_address, endpoints.temporal_namespace)
    markers = tmp_path / "markers"
    markers.mkdir()
    agent = _gated_agent(f"fault-{uuid.uuid4().hex[:8]}", tmp_path, markers)
    register_agent(store.tenant(agent.tenant), agent)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    trigger = message("slow_scan the fleet")
    async with (
        open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps,
        build_worker(client, deps, queue),
    ):
        await deliver(client, agent.runtime(), trigger, queue)
        await asyncio.wait_for(_until("started-*", markers), 60)
        await asyncio.to_thread(own_temporal.down)  # the orchestrator goes away mid-wake
        (markers / "release").touch()  # the tool finishes while Temporal is down
        await asyncio.to_thread(own_temporal.up)  # ...and comes back on the same data
        result = await asyncio.wait_for(wake(client, agent.runtime(), trigger, queue), 120)
    assert result.deduplicated  # the answer of the wake that was already running
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(agent.tenant)
    events = ts.events(agent.name)
    assert Counter(e.step_key for e in events).most_common(1)[0][1] == 1
    assert [e.kind for e in events] == ["turn", "turn", "tool_call", "tool_result", "turn"]
    assert len(ts.wakes(agent.name)) == 1
