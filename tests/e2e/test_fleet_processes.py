"""Three ``wakeful worker`` processes on one Temporal and one Postgres, each with a Qdrant
Edge shard of its own, retrieve what one worker retrieves.

An agent's workflow stays on the worker that ran its last workflow task until that worker
leaves; then the next wake runs wherever a worker takes it, and compiles against that
worker's shard. The test moves the agent the way a fleet does, by stopping (SIGTERM, as a
rollout does) the worker it is on: its four wakes run on the first worker, then on one of
the other two, then on the last one standing, then on the first worker again, restarted on
its shard, which was left behind while the others indexed. Where each ran is read from the
identities Temporal records with every workflow task (``pid@host``), so the placement is
shown, not assumed, and nothing waits on time: each move follows from which processes are
alive.

Every wake's retrieval must find what one worker finds on the same history, the fact told
on another worker included.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import fresh_demo_agent
from tests.e2e.test_index_fleet_wakes import run_on, triggers
from tests.ops.cli_env import (
    ROOT,
    make_env,
    simulated_worker_env,
    worker_command,
)
from wakeful.substrate.indexing import load_hits
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import workflow_id

AGENTS = "tests.e2e.fleet_agents:registry"

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect in the local Qdrant:UserWarning"
)


class Fleet:
    """``wakeful worker`` processes on one queue; worker ``n`` holds the shard ``shard-n``."""

    def __init__(self, env: dict[str, str], root: Path) -> None:
        self.env, self.root = env, root
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.holder: dict[int, int] = {}  # pid -> shard, for every process started
        self.started = 0

    def start(self, shard: int) -> None:
        self.started += 1
        log = (self.root / f"worker-{self.started}.log").open("wb")
        proc = subprocess.Popen(
            worker_command(AGENTS),
            env=os.environ
            | self.env
            | {
                "WAKEFUL_QDRANT_PATH": str(self.root / f"shard-{shard}"),
                "WAKEFUL_STATE_DIR": str(self.root / f"state-{self.started}"),
            },
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
        log.close()
        self.procs[shard] = proc
        self.holder[proc.pid] = shard

    def stop(self, shard: int) -> None:
        """SIGTERM, as a rollout stops a worker; it must shut down cleanly (exit 0)."""
        proc = self.procs.pop(shard)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        assert code == 0, f"the worker on shard-{shard} exited {code}: see {self.root}/worker-*.log"

    def close(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait(timeout=10)
        self.procs.clear()


# Four worker processes start (about 6 s of CPU each to import); two busy cores take minutes.
@pytest.mark.timeout(600)
async def test_three_worker_processes_retrieve_what_one_worker_retrieves(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    pg_url: str,
    sim: SimulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = fresh_demo_agent(tmp_path / "fleet", store, "fleet")
    client = temporal_dev.client
    address = client.service_client.config.target_host
    env = simulated_worker_env(make_env(pg_url, address, tmp_path, monkeypatch), sim) | {
        "WAKEFUL_TENANT": agent.tenant,
        "FLEET_WORKSPACE": agent.workdir or "",
    }
    queue, ts = env["WAKEFUL_TASK_QUEUE"], store.tenant(agent.tenant)
    handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
    fleet = Fleet(env, tmp_path)
    found: list[list[str]] = []
    ran_on: list[set[int]] = []  # per wake: the shards of the workers that ran its tasks
    read = 0
    left: list[int] = []  # the shards of the workers stopped, in turn
    try:
        for shard in range(3):
            fleet.start(shard)
        for n, trigger in enumerate(triggers()):
            if n == 3:
                # The first worker to leave comes back on its shard, which missed what the
                # others indexed meanwhile; the last one standing leaves.
                (alone,) = fleet.procs
                fleet.start(left[0])
                fleet.stop(alone)
            done = await wake(client, agent.runtime(), trigger, queue)
            assert done.status == "done", done
            (compiled, *_) = ts.compiles(done.wake_id)
            stored = (
                load_hits(ts.get_blob(compiled.retrieval_hash)) if compiled.retrieval_hash else None
            )
            found.append([h.text for h in stored.hits] if stored else [])
            events = (await handle.fetch_history()).events[read:]
            read += len(events)
            pids = [
                int(e.workflow_task_started_event_attributes.identity.split("@")[0])
                for e in events
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
            ]
            ran_on.append({fleet.holder[p] for p in pids})
            if n < 2:
                # The worker the agent's workflow is on leaves: its next wake moves.
                left.append(fleet.holder[pids[-1]])
                fleet.stop(left[-1])
    finally:
        fleet.close()

    # The first three wakes ran on three different workers; the fourth on a restarted one.
    first, second, third, fourth = ran_on
    assert len(first | second | third) == 3, ran_on
    assert third.isdisjoint(first | second) and fourth == {left[0]}, ran_on
    # Each new session's wake finds the fact another worker's wake was told.
    for hits in found[2:]:
        assert any("rotates every Tuesday at noon" in h for h in hits), hits
    solo = fresh_demo_agent(tmp_path / "solo", store, "solo")
    assert found == await run_on(temporal_dev, store, sim, solo, [tmp_path / "alone"] * 4)
