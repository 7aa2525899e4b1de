"""A worker killed in the middle of a wake: a new worker finishes it, nothing doubled or lost,
and the tool that was running loses none of its attempts."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, open_deps, restart_agent, running_worker, wait_for_marker
from tests.e2e.worker_process import fresh_process_config, sigkill, worker_process
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker


async def test_killed_worker_mid_tool_is_finished_by_a_new_worker(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    cfg = fresh_process_config(
        temporal_dev, sim, pg_url, tmp_path, tenant_prefix="restart", workdir=tmp_path
    )
    tenant, markers, queue, key = cfg.tenant, cfg.markers, cfg.queue, cfg.key
    base = restart_agent(tenant, tmp_path, markers)
    # One attempt: the worker's death is not the tool's failure, and costs it no attempt.
    agent = replace(base, tools=(replace(base.tools[0], max_attempts=1),))
    register_agent(store.tenant(tenant), agent)
    client = await cfg.connect()
    async with worker_process(Path(__file__).with_name("worker_proc.py"), cfg) as proc:
        pending = asyncio.create_task(
            wake(client, agent.runtime(), message("slow_scan the fleet"), queue)
        )
        await wait_for_marker(markers, "started-*")
        sigkill(proc)  # mid-tool: no chance to clean up
        (markers / "release").touch()
        async with running_worker(client, store, AgentRegistry([agent]), sim, key, queue):
            result = await asyncio.wait_for(pending, timeout=90)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(tenant)
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert [e.kind for e in events] == ["turn", "turn", "tool_call", "tool_result", "turn"]
    assert events[3].text == "scan complete: 3 services healthy" and not events[3].is_error
    assert [c.call_index for c in ts.model_calls(result.wake_id)] == [0, 1]
    assert [c.call_index for c in ts.compiles(result.wake_id)] == [0, 1]
    # One wake row, one handoff note: the retried steps found their first writes.
    assert [w.wake_id for w in ts.wakes(agent.name)] == [result.wake_id]
    assert [n.wake_id for n in ts.handoffs(agent.name)] == [result.wake_id]
    # The tool ran on both workers (at-least-once) but is recorded exactly once.
    assert len(list(markers.glob("started-*"))) == 2


async def test_a_worker_shut_down_mid_tool_leaves_the_tool_to_its_successor(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    """A graceful shutdown cancels the running tool. The cancellation is not the tool's
    result: nothing is recorded, and the next worker runs the tool again."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tenant, queue = f"stop-{uuid.uuid4().hex[:8]}", f"q-{uuid.uuid4().hex[:8]}"
    agent = restart_agent(tenant, tmp_path, markers)
    register_agent(store.tenant(tenant), agent)
    client = temporal_dev.client
    registry = AgentRegistry([agent])
    async with open_deps(store, registry, sim, uuid.uuid4().hex) as deps:
        async with build_worker(client, deps, queue):
            pending = asyncio.create_task(
                wake(client, agent.runtime(), message("slow_scan the fleet"), queue)
            )
            await wait_for_marker(markers, "started-*")
        # The first worker is gone; its tool was cancelled, and recorded nothing.
        ts = store.tenant(tenant)
        assert not [e for e in ts.events(agent.name) if e.kind == "tool_result"]
        (markers / "release").touch()
        async with build_worker(client, deps, queue):
            result = await asyncio.wait_for(pending, timeout=90)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert [e.kind for e in events] == ["turn", "turn", "tool_call", "tool_result", "turn"]
    assert events[3].text == "scan complete: 3 services healthy"
    assert not events[3].is_error
    assert len(list(markers.glob("started-*"))) == 2  # run again, not read back
