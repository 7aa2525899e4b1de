"""A worker killed in the middle of a model call: the call heartbeats, so Temporal retries
it on the next worker once the heartbeats stop, not after the call's whole timeout; and the
retry of an agent with a fallback goes past the route that was in flight (the heartbeats
name it), as the failover policy sends a route that timed out.

The first worker runs in a subprocess (``model_worker_proc.py``); the simulator answers its
call with a reply that never finishes (a ``trickle`` step), and the test kills it with
SIGKILL while the reply trickles. A worker in the test process then finishes the wake.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.api.enums.v1 import TimeoutType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, model_call_retry, running_worker
from tests.e2e.model_worker_proc import FALLBACK, model_agent
from tests.e2e.worker_process import fresh_process_config, sigkill, worker_process
from tests.orchestration.helpers import within
from wakeful.agents import AgentRegistry
from wakeful.contracts import CALL_MODEL
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import workflow_id
from wakeful.workflows.retries import MODEL_HEARTBEAT, MODEL_TIMEOUT

# Failure timeouts only: how long a step may take before the test fails saying where it is.
# The wake's bound after the kill is well short of MODEL_TIMEOUT: a call retried only when
# its timeout passed (no heartbeats) fails the test.
START_BOUND_S = 40.0
FINISH_BOUND_S = MODEL_TIMEOUT.total_seconds() / 3
assert MODEL_HEARTBEAT.total_seconds() * 2 < FINISH_BOUND_S < MODEL_TIMEOUT.total_seconds()

_SCRIPT = Script.parse(
    [
        {"text": "This reply never ends.", "trickle": True},
        {"text": "Answered on the next worker."},
    ]
)


async def _trickling(sim: SimulatorServer, key: str) -> None:
    """Wait until the simulator is trickling the first worker's reply."""
    while sim.simulator.trickles(key) < 1:
        await asyncio.sleep(0.05)


async def _heartbeat_seen(client: Client, wid: str) -> None:
    """Wait until the workflow's pending model call has sent Temporal a heartbeat (the
    first goes out a few seconds into the call, naming the route it waits for)."""
    handle = client.get_workflow_handle(wid)
    while True:
        desc = await handle.describe()
        if any(
            a.activity_type.name == CALL_MODEL and a.HasField("last_heartbeat_time")
            for a in desc.raw_description.pending_activities
        ):
            return
        await asyncio.sleep(0.05)


async def _retried_after_heartbeats_stopped(client: Client, wid: str) -> None:
    """The model call's second attempt ran because the first one's heartbeats stopped."""
    started = await model_call_retry(client, wid)
    assert started.attempt == 2
    timeout = started.last_failure.timeout_failure_info.timeout_type
    assert timeout == TimeoutType.TIMEOUT_TYPE_HEARTBEAT, TimeoutType.Name(timeout)


async def test_a_killed_call_is_retried_once_its_heartbeats_stop_past_the_route_in_flight(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    cfg = fresh_process_config(temporal_dev, sim, pg_url, tmp_path, tenant_prefix="model-lost")
    agent = model_agent(cfg.tenant, fallback=True)
    ts = store.tenant(cfg.tenant)
    register_agent(ts, agent)
    sim.simulator.set_script(_SCRIPT, scope=cfg.key)
    client = await cfg.connect()
    wid = workflow_id(cfg.tenant, agent.name)
    script = Path(__file__).with_name("model_worker_proc.py")
    async with worker_process(script, cfg, "--fallback") as proc:
        pending = asyncio.create_task(
            wake(client, agent.runtime(), message("say something"), cfg.queue)
        )
        await within(START_BOUND_S, client, [wid], _trickling(sim, cfg.key))
        await within(START_BOUND_S, client, [wid], _heartbeat_seen(client, wid))
        sigkill(proc)  # mid-call: the primary's reply is still trickling
        async with running_worker(client, store, AgentRegistry([agent]), sim, cfg.key, cfg.queue):
            result = await within(FINISH_BOUND_S, client, [wid], pending)

    assert (result.status, result.output) == ("done", "Answered on the next worker.")
    (served,) = ts.model_calls(result.wake_id)
    assert (served.provider, served.model) == ("openai", FALLBACK[1])
    assert served.failover is not None and served.failover["served"] == "/".join(FALLBACK)
    (passed,) = served.failover["passed"]
    assert passed["route"] == f"anthropic/{agent.model}"
    assert passed["reason"].startswith("no reply when attempt 1 ended")
    # The primary was not asked again: its one call is the trickle.
    assert [c.endpoint for c in sim.simulator.calls(cfg.key)] == ["openai.chat"]
    await _retried_after_heartbeats_stopped(client, wid)
