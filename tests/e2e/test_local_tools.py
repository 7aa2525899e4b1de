"""Quick tools run as local activities; a tool that needs a heartbeat or time cannot.

A local tool skips the task-queue round trip a regular activity costs (a workflow task of
its own and three history events), which is most of a short tool's share of a wake.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import demo_scout, message, running_worker
from tests.e2e.worker_process import fresh_process_config, sigkill, worker_process
from wakeful.agents import Agent, AgentRegistry, Tool
from wakeful.demo.agent import seed_workspace
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.agent import AgentWorkflow, workflow_id


def _tool(**kw: object) -> Tool:
    return Tool(name="t", description="d", input_schema={}, fn=lambda a, c: "", **kw)  # type: ignore[arg-type]


def test_a_local_tool_may_not_heartbeat_or_run_long() -> None:
    with pytest.raises(UserError, match="cannot heartbeat"):
        _tool(local=True, timeout_s=5.0, heartbeat_s=1.0)
    with pytest.raises(UserError, match="must finish within 10 s"):
        _tool(local=True, timeout_s=60.0)
    assert _tool(local=True, timeout_s=10.0).local


async def test_a_local_tool_runs_in_the_workflow_task_and_is_recorded_once(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    assert next(t for t in agent.tools if t.name == "list_dir").local
    async with running_worker(
        temporal_dev.client, store, AgentRegistry([agent]), sim, uuid.uuid4().hex
    ) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("list_dir . please"), q)
    assert (result.status, result.tool_calls) == ("done", 1)
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    (tool_result,) = [e for e in events if e.kind == "tool_result"]
    assert "README.md" in tool_result.text
    history = await temporal_dev.client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == ["wakeful.call_model", "wakeful.call_model"]  # no run_tool task


async def test_a_fifo_in_the_work_directory_is_a_tool_error_and_the_agent_goes_on(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    """read_file on a FIFO used to block in open() past the local tool's timeout; the
    timeout replayed in another shape than it ran, so after a worker restart the agent's
    workflow failed on replay (TMPRL1100) and refused every trigger. Now the FIFO is
    refused at once, the model sees why, a new worker replays the wake and serves the next
    trigger, and the whole history replays in Replayer."""
    workdir = seed_workspace(tmp_path / "ws")
    os.mkfifo(workdir / "pipe.fifo")
    cfg = fresh_process_config(
        temporal_dev, sim, pg_url, tmp_path, tenant_prefix="fifo", workdir=workdir
    )
    tenant, queue, key = cfg.tenant, cfg.queue, cfg.key
    agent = demo_scout(workdir, tenant)
    register_agent(store.tenant(tenant), agent)
    client = await cfg.connect()
    try:
        async with worker_process(Path(__file__).with_name("tools_worker_proc.py"), cfg) as proc:
            first = await asyncio.wait_for(
                wake(client, agent.runtime(), message("read_file path=pipe.fifo"), queue),
                timeout=120,
            )
            sigkill(proc)  # the next worker starts from the history alone
    finally:
        _release_fifo(workdir / "pipe.fifo")
    assert (first.status, first.tool_calls) == ("done", 1)

    handle = client.get_workflow_handle(workflow_id(tenant, agent.name))
    async with running_worker(client, store, AgentRegistry([agent]), sim, key, queue):
        second = await asyncio.wait_for(
            wake(client, agent.runtime(), message("read_file path=README.md"), queue),
            timeout=120,
        )
        await handle.signal(AgentWorkflow.stop)
        await asyncio.wait_for(handle.result(), timeout=120)
    assert (second.status, second.number, second.tool_calls) == ("done", 2, 1)
    ts = store.tenant(tenant)
    (fifo,) = [e for e in ts.events(agent.name, wake_id=first.wake_id) if e.kind == "tool_result"]
    assert fifo.is_error
    assert fifo.text == "FileToolError: 'pipe.fifo' is a FIFO, not a regular file"
    events = ts.events(agent.name, wake_id=second.wake_id)
    (readme,) = [e for e in events if e.kind == "tool_result"]
    assert not readme.is_error and readme.text.startswith("#")

    replayed = await Replayer(workflows=WORKFLOWS, data_converter=data_converter).replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=False
    )
    assert replayed.replay_failure is None


def _release_fifo(fifo: Path) -> None:
    """Let a reader stuck in open() on ``fifo`` go (only the code before the fix had one)."""
    for _ in range(64):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return
