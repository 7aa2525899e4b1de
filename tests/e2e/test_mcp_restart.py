"""A worker killed in the middle of an MCP tool call: a new worker, with a fresh MCP server of
its own, runs the call again and finishes the wake, each step recorded once.

The first worker runs in a subprocess (``mcp_worker_proc.py``) and its MCP server
(``mcp_hold_server.py``, FastMCP over stdio) in a subprocess of that; the server's tool holds
until the test releases it. The worker is killed with SIGKILL while the call is in flight, so
nothing of it is cleaned up: its server is orphaned in the middle of the call.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message, running_worker
from tests.e2e.mcp_worker_proc import mcp_agent
from tests.e2e.worker_process import fresh_process_config, sigkill, worker_process
from tests.orchestration.helpers import within
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.agent import AgentWorkflow, workflow_id

# Failure timeouts only: how long a step may take before the test fails saying where it is.
BOUND_S = 40.0

_HOLD_SCRIPT = Script.parse(
    [
        {"tool_calls": [{"name": "hold__hold", "input": {"label": "the fleet"}}]},
        {"text": "Held and released."},
    ]
)


async def _started(markers: Path, count: int) -> list[tuple[int, int]]:
    """Wait for ``count`` calls of the server's tool to have started: (server pid, its parent
    pid) of each, oldest first."""
    for _ in range(int(BOUND_S * 20)):
        found = sorted(markers.glob("started-*"), key=lambda p: int(p.name.split("-")[3]))
        if len(found) >= count:
            return [(int(p.name.split("-")[1]), int(p.name.split("-")[2])) for p in found]
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} call(s) of the MCP tool never started in {markers}")


def _exited(pid: int) -> bool:
    """Whether the process is gone (or a zombie its new parent has yet to reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def _wait_exited(pid: int) -> None:
    for _ in range(int(BOUND_S * 20)):
        if _exited(pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the orphaned MCP server {pid} is still running")


async def test_a_worker_killed_mid_mcp_call_is_finished_by_a_new_worker_once(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    cfg = fresh_process_config(temporal_dev, sim, pg_url, tmp_path, tenant_prefix="mcp-restart")
    tenant, markers, queue, key = cfg.tenant, cfg.markers, cfg.queue, cfg.key
    agent = mcp_agent(tenant, str(markers))
    register_agent(store.tenant(tenant), agent)
    sim.simulator.set_script(_HOLD_SCRIPT, scope=key)
    client = await cfg.connect()
    wid = workflow_id(tenant, agent.name)
    try:
        async with worker_process(Path(__file__).with_name("mcp_worker_proc.py"), cfg) as proc:
            pending = asyncio.create_task(
                wake(client, agent.runtime(), message("hold the fleet"), queue)
            )
            ((orphan, parent),) = await _started(markers, 1)
            assert parent == proc.pid  # the call is in flight in the first worker's server
            sigkill(proc)  # mid-call: no chance to close its MCP session
            async with running_worker(client, store, AgentRegistry([agent]), sim, key, queue):
                # The new worker starts a server of its own, whose call starts while the
                # first server's call is still unreleased.
                first, second = await within(BOUND_S, client, [wid], _started(markers, 2))
                assert first == (orphan, proc.pid)
                assert second[0] != orphan and second[1] == os.getpid()
                # The orphaned server, its stdin closed by the kill, ends by itself,
                # its call unreleased: nothing is left running or holding the call.
                await _wait_exited(orphan)
                (markers / "release").touch()
                result = await within(BOUND_S, client, [wid], pending)
                notes = store.tenant(tenant).handoffs(agent.name)
                # Stopped, the agent ends its session with a note of its own.
                handle = client.get_workflow_handle(wid)
                await handle.signal(AgentWorkflow.stop)
                await within(BOUND_S, client, [wid], handle.result())
    finally:
        (markers / "release").touch()

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(tenant)
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert [e.kind for e in events] == ["turn", "tool_call", "tool_result", "turn"]
    # One call and one result for the MCP call's id; no step recorded twice.
    (call,) = [e for e in events if e.kind == "tool_call"]
    (res,) = [e for e in events if e.kind == "tool_result"]
    assert (call.tool_name, res.tool_name) == ("hold__hold", "hold__hold")
    assert res.tool_call_id == call.tool_call_id
    assert (res.text, res.is_error) == ("released the fleet", False)
    assert not [k for k, n in Counter(e.step_key for e in events).items() if n > 1]
    assert [c.call_index for c in ts.model_calls(result.wake_id)] == [0, 1]
    assert [c.call_index for c in ts.compiles(result.wake_id)] == [0, 1]
    assert [w.wake_id for w in ts.wakes(agent.name)] == [result.wake_id]
    assert [n.wake_id for n in notes] == [result.wake_id]
    assert len({n.step_key for n in ts.handoffs(agent.name)}) == 2  # the wake's, the stop's
    # The tool ran in both servers (at least once) and was recorded once.
    assert len(list(markers.glob("started-*"))) == 2

    # The agent's whole history, across both workers, replays.
    replayed = await Replayer(workflows=WORKFLOWS, data_converter=data_converter).replay_workflow(
        await client.get_workflow_handle(wid).fetch_history(), raise_on_replay_failure=False
    )
    assert replayed.replay_failure is None


async def _heartbeat_seen(client: Client, wid: str) -> None:
    """Wait until the workflow's pending tool call has sent Temporal a heartbeat."""
    handle = client.get_workflow_handle(wid)
    for _ in range(int(BOUND_S * 20)):
        desc = await handle.describe()
        if any(
            a.activity_type.name == "wakeful.run_tool" and a.HasField("last_heartbeat_time")
            for a in desc.raw_description.pending_activities
        ):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the MCP call never heartbeat")


async def test_an_mcp_call_heartbeats_while_its_server_works(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    """What lets a dead worker's call be retried soon also keeps a live one's going: the
    call heartbeats while it waits, and runs once, on its first attempt."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tenant, key = f"mcp-beat-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    agent = mcp_agent(tenant, str(markers))
    register_agent(store.tenant(tenant), agent)
    sim.simulator.set_script(_HOLD_SCRIPT, scope=key)
    client, wid = temporal_dev.client, workflow_id(tenant, agent.name)
    try:
        async with running_worker(client, store, AgentRegistry([agent]), sim, key) as queue:
            pending = asyncio.create_task(
                wake(client, agent.runtime(), message("hold the fleet"), queue)
            )
            await within(BOUND_S, client, [wid], _started(markers, 1))
            await within(BOUND_S, client, [wid], _heartbeat_seen(client, wid))
            (markers / "release").touch()
            result = await within(BOUND_S, client, [wid], pending)
    finally:
        (markers / "release").touch()
    assert (result.status, result.tool_calls) == ("done", 1)
    assert len(list(markers.glob("started-*"))) == 1
    history = await client.get_workflow_handle(wid).fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert set(attempts) == {1}
