"""On the dev server: a worker killed while a child agent's tool runs. A new worker — which
never registered the child — rebuilds it from its stored bundle and finishes the child and
the parent's wake, every step recorded once. (``tests/e2e/test_worker_restart.py`` does the
same for a parent's own tool.)"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker, wait_for_marker
from tests.e2e.worker_process import fresh_process_config, sigkill, worker_process
from tests.orchestration.restart import parent_agent
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

SCRIPT = Script.parse(
    [
        {"tool_calls": [{"name": "delegate", "input": {"kind": "scan", "task": "Scan it."}}]},
        {"tool_calls": [{"name": "slow_scan", "input": {}}]},  # the child calls the tool
        {"text": json.dumps({"summary": "3 services healthy"})},  # the child's answer
        {"text": "The fleet is healthy. Next: nothing."},
    ]
)


async def test_a_worker_killed_mid_child_is_replaced_and_each_step_recorded_once(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    cfg = fresh_process_config(
        temporal_dev, osim, pg_url, tmp_path, tenant_prefix="crash", workdir=tmp_path
    )
    tenant, markers, queue, key = cfg.tenant, cfg.markers, cfg.queue, cfg.key
    agent = parent_agent(tenant, tmp_path, markers)
    register_agent(store.tenant(tenant), agent)
    osim.simulator.set_script(SCRIPT, scope=key)
    client = await cfg.connect()
    async with worker_process(Path(__file__).with_name("child_worker_proc.py"), cfg) as proc:
        pending = asyncio.create_task(
            wake(client, agent.runtime(), message("scan the fleet"), queue)
        )
        await wait_for_marker(markers, "started-*")
        sigkill(proc)  # mid-tool, inside the child
        (markers / "release").touch()
        # The parent only: the child is rebuilt from its stored bundle.
        async with running_worker(client, store, AgentRegistry([agent]), osim, key, queue):
            result = await asyncio.wait_for(pending, timeout=120)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(tenant)
    for name, wake_id in (("lead", result.wake_id), ("lead/child/1", "lead/child/1:1")):
        events = ts.events(name, wake_id=wake_id)
        assert all(n == 1 for n in Counter(e.step_key for e in events).values())
        turns = [e.kind for e in events if e.kind != "evidence"]
        assert turns == ["turn", "tool_call", "tool_result", "turn"]
    child_events = ts.events("lead/child/1", wake_id="lead/child/1:1")
    assert child_events[2].text == "scan complete: 3 services healthy"
    assert len(list(markers.glob("started-*"))) == 2  # ran on both workers, recorded once
    (card,) = [m for m in ts.memories("lead") if m.source == "child:lead/child/1"]
    assert '"summary":"3 services healthy"' in card.text
    # The lead's second call brought the card as evidence, recorded once with its wake.
    (evidence,) = [e for e in ts.events("lead", wake_id=result.wake_id) if e.kind == "evidence"]
    assert evidence.meta["evidence"].split() == [f"memory:{card.id}"]
