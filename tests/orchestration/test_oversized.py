"""Oversized triggers and continue-as-new under concurrent updates, on the Temporal dev server.

The bug: a 1.6 MB message sent as a ``wake`` update was accepted into the history (where it
stays for good), pushed the run towards continue-as-new, and another caller's update that was
in flight was answered by the closing run instead of its wake. Now the update validator
refuses the message before it is accepted, Wakeful's client refuses it before it is sent, and
the workflow continues-as-new only when no handler is running.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.cli.main import app
from wakeful.contracts import MAX_TRIGGER_BYTES, Trigger, WakeResult
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver, wake
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id

HUGE = "x" * 1_600_000


async def _raw_wake(
    env: WorkflowEnvironment, agent: Agent, trigger: Trigger, queue: str
) -> WakeResult:
    """The ``wake`` update without Wakeful's client-side check (any Temporal client)."""
    start = WithStartWorkflowOperation(
        AgentWorkflow.run,
        AgentInput(runtime=agent.runtime(), wakes_per_run=1),
        id=workflow_id(agent.tenant, agent.name),
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    return await env.client.execute_update_with_start_workflow(
        AgentWorkflow.wake,
        trigger,
        start_workflow_operation=start,
        id=f"wake:{trigger.idempotency_key}",
    )


async def _all_runs(env: WorkflowEnvironment, wf_id: str) -> tuple[list[str], list[HistoryEvent]]:
    """Every run of a workflow, newest first, and all their events: followed back from the
    latest run through continue-as-new (no dependence on visibility's lag)."""
    runs: list[str] = []
    events: list[HistoryEvent] = []
    run_id: str | None = None
    while True:
        history = await env.client.get_workflow_handle(wf_id, run_id=run_id).fetch_history()
        runs.append(history.run_id)
        events += history.events
        started = history.events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return runs, events
        run_id = started.continued_execution_run_id


async def test_concurrent_updates_across_continue_as_new_each_get_their_own_wake(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_dev
    keys = [f"k{i}-{uuid.uuid4().hex[:6]}" for i in range(4)]
    async with worker(env.client, store, [agent], osim) as (queue, _):
        # wakes_per_run=1: the run continues-as-new after every wake, while the other
        # callers' updates are in flight.
        big = _raw_wake(env, agent, message(f"summarise this: {HUGE}", "huge"), queue)
        small = [_raw_wake(env, agent, message(f"hello {k}", k), queue) for k in keys]
        outcomes = await asyncio.gather(big, *small, return_exceptions=True)
        refused, results = outcomes[0], outcomes[1:]
        runs, events = await _all_runs(env, workflow_id(agent.tenant, agent.name))

    assert isinstance(refused, WorkflowUpdateFailedError)
    assert f"{MAX_TRIGGER_BYTES:,} bytes (MAX_TRIGGER_BYTES)" in str(refused.cause)
    for key, result in zip(keys, results, strict=True):
        assert isinstance(result, WakeResult), result
        assert (result.idempotency_key, result.status, result.deduplicated) == (key, "done", False)
    assert sorted(r.number for r in results if isinstance(r, WakeResult)) == [1, 2, 3, 4]
    assert len(runs) >= 2  # it continued-as-new with callers waiting
    accepted = [
        e.workflow_execution_update_accepted_event_attributes.protocol_instance_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert sorted(accepted) == sorted(f"wake:{k}" for k in keys)  # the huge one never entered
    assert max(e.ByteSize() for e in events) < 64 * 1024
    ts = store.tenant(agent.tenant)
    assert sorted(w.idempotency_key for w in ts.wakes(agent.name)) == sorted(keys)


async def test_wakefuls_client_refuses_an_oversized_trigger_before_sending(
    temporal_dev: WorkflowEnvironment, agent: Agent
) -> None:
    rt, queue = agent.runtime(), f"q-{uuid.uuid4().hex[:8]}"  # no worker: nothing may arrive
    with pytest.raises(UserError, match=r"limit is 524,288 bytes \(MAX_TRIGGER_BYTES\)"):
        await wake(temporal_dev.client, rt, message(HUGE, "huge"), queue)
    with pytest.raises(UserError, match="send a short message that points at it"):
        await deliver(temporal_dev.client, rt, message(HUGE, "huge"), queue)
    with pytest.raises(Exception, match="not found"):
        await temporal_dev.client.get_workflow_handle(
            workflow_id(agent.tenant, agent.name)
        ).describe()


async def test_an_oversized_signal_is_answered_rejected_and_wakes_nothing(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env, rt = temporal_dev, agent.runtime()
    async with worker(env.client, store, [agent], osim) as (queue, _):
        # A signal cannot be refused before it is stored; sent past the client's check, the
        # workflow answers it instead of waking the agent.
        await env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(runtime=rt),
            id=workflow_id(agent.tenant, agent.name),
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal="trigger",
            start_signal_args=[message(HUGE, "huge-signal")],
        )
        answer = await _raw_wake(env, agent, message("what happened?", "huge-signal"), queue)
        after = await wake(env.client, rt, message("hello", "after"), queue)
    assert answer.deduplicated and answer.status.startswith("rejected: the trigger 'huge-signal'")
    assert (after.status, after.number) == ("done", 1)
    assert [w.idempotency_key for w in store.tenant(agent.tenant).wakes(agent.name)] == ["after"]


def test_the_trigger_command_refuses_an_oversized_message_with_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
    # Nothing is reachable here: the command must refuse before contacting any server.
    env = {
        "WAKEFUL_STATE_DIR": str(tmp_path),
        "WAKEFUL_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/x",
    }
    result = CliRunner().invoke(app, ["trigger", "scout", "-m", HUGE], env=env)
    assert result.exit_code == 2, result.output
    assert "limit is 524,288 bytes (MAX_TRIGGER_BYTES)" in result.output
