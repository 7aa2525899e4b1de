"""Kill/outage soak: a worker SIGKILLed again and again and Postgres stopped once, during a run
of wakes that use a tool, a local tool and a child agent; afterwards every wake is done, every
step is recorded once, and every workflow's history replays.

The pieces are real: the session's Temporal dev server, a Postgres of the test's own (it is
stopped and started on the same data), the provider simulator's planner (it calls the tool
a message names and answers tool results with text, so a model call that is run again after
a kill gets the same reply) and workers in their own processes (``soak_worker.py``).

Nothing waits on time: the kill points and the outage are chosen by a seeded random number
generator as counts of events recorded in the substrate (the run is killed right after the
k-th step is seen), the outage ends once the worker has met it (its store reports a failed
statement), and every wait is bounded only to fail instead of hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message
from tests.ops.soak_worker import soak_agents
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import connect, deliver
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.agent import workflow_id

SEED = 20261126
AGENTS = ["soak-a", "soak-b", "soak-c"]
WAKES_PER_AGENT = 12  # 36 wakes of the agents, and a child's wake for each delegation
KILLS = 5
# The planner calls the tool a message names: the regular tool, the local tool, a child.
MESSAGES = (
    "scan the fleet",
    "peek at the queue",
    'delegate {"kind": "check", "task": "peek at the queue and report"}',
)
# Events of one wake (ask, "Calling x.", call, result, reply); a delegation adds its child's.
EVENTS_PER_WAKE = 5
EXPECTED_EVENTS = EVENTS_PER_WAKE * (len(AGENTS) * WAKES_PER_AGENT) * 4 // 3
PHASE_S = 240.0  # the longest any one phase may take before the soak fails


async def _until(what: str, check: Callable[[], bool], timeout: float = PHASE_S) -> None:
    """Poll ``check``; the bound only turns a hang into a failure that says what was awaited."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"soak: {what} did not happen within {timeout:g} s")
        await asyncio.sleep(0.05)


class Soak:
    """The workers' processes, and what the test reads from the substrate while they run."""

    def __init__(self, cfg: dict[str, Any], store: Store) -> None:
        self.cfg, self.store = cfg, store
        self.markers = Path(cfg["markers"])
        self.procs: list[subprocess.Popen[bytes]] = []
        self.kills: list[int] = []

    def sql(self, query: str) -> list[Any]:
        with self.store.engine.connect() as conn:
            return list(conn.execute(text(query), {"t": self.cfg["tenant"]}))

    def events(self) -> int:
        try:
            return int(self.sql("SELECT count(*) FROM events WHERE tenant = :t")[0][0])
        except OperationalError:  # the database is down or just back: ask again
            return -1

    async def start_worker(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("soak_worker.py")), json.dumps(self.cfg)]
        )
        self.procs.append(proc)
        ready = self.markers / f"worker-ready-{proc.pid}"
        await _until(f"worker {proc.pid} ready", lambda: ready.exists() or proc.poll() is not None)
        assert proc.poll() is None, f"worker {proc.pid} exited with {proc.returncode}"

    async def kill_worker(self, at_events: int) -> None:
        proc = self.procs[-1]
        os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up, mid-whatever it was doing
        await asyncio.to_thread(proc.wait, 30)
        self.kills.append(at_events)
        await self.start_worker()

    def reached(self, events: int) -> Callable[[], bool]:
        return lambda: self.events() >= events

    def db_errors(self) -> int:
        return len(list(self.markers.glob("db-error-*")))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)


async def _postgres_outage(stack: EmbeddedStack, soak: Soak) -> None:
    """Stop Postgres; once the worker has met the outage, start it again on the same data."""
    before = soak.db_errors()
    postmaster = stack.status().postgres.pid
    await asyncio.to_thread(stack.down)
    await _until("the worker meeting the outage", lambda: soak.db_errors() > before)
    # A restart racing the old postmaster's exit would find its socket lock.
    await _until("the old postmaster's exit", lambda: not _alive(postmaster))
    await asyncio.to_thread(stack.up)


def _alive(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def _all_runs(client: Client, wid: str) -> list[WorkflowHistory]:
    """Every run of a workflow, newest first, following continue-as-new back to the first."""
    histories: list[WorkflowHistory] = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(wid, run_id=run_id).fetch_history()
        histories.append(history)
        started = history.events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return histories
        run_id = started.continued_execution_run_id


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 100 s on two busy cores; the phases fail sooner than this
async def test_kills_and_an_outage_lose_and_double_nothing_and_histories_replay(
    temporal_dev: WorkflowEnvironment,
    own_postgres: EmbeddedStack,
    sim: SimulatorServer,
    tmp_path: Path,
) -> None:
    endpoints = await asyncio.to_thread(own_postgres.up)
    store = Store.connect(endpoints.database_url)
    tenant = f"soak-{uuid.uuid4().hex[:8]}"
    markers = tmp_path / "markers"
    markers.mkdir()
    agents = soak_agents(tenant, AGENTS, tmp_path / "work")
    for agent in agents:
        Path(agent.workdir).mkdir(parents=True)
        register_agent(store.tenant(tenant), agent)
    cfg: dict[str, Any] = {
        "tenant": tenant,
        "agents": AGENTS,
        "workdir": str(tmp_path / "work"),
        "markers": str(markers),
        "db": endpoints.database_url,
        "sim": sim.base_url,
        "key": uuid.uuid4().hex,
        "queue": f"q-{uuid.uuid4().hex[:8]}",
        "temporal": temporal_dev.client.service_client.config.target_host,
        "namespace": temporal_dev.client.namespace,
    }
    # Kill points and the outage: distinct event counts spread over the run, from a seed.
    rng = random.Random(SEED)
    points = sorted(rng.sample(range(10, EXPECTED_EVENTS * 4 // 5), KILLS + 1))
    outage_at = rng.choice(points[1:-1])
    client = await connect(cfg["temporal"], cfg["namespace"])
    soak = Soak(cfg, store)
    try:
        await soak.start_worker()
        for n in range(WAKES_PER_AGENT):
            for agent in agents:
                trigger = message(MESSAGES[n % len(MESSAGES)], key=f"{agent.name}-{n}")
                await deliver(client, agent.runtime(), trigger, cfg["queue"])
        for point in points:
            await _until(f"{point} events recorded", soak.reached(point))
            if point == outage_at:
                await _postgres_outage(own_postgres, soak)
            else:
                await soak.kill_worker(soak.events())
        total = len(AGENTS) * WAKES_PER_AGENT

        def settled() -> bool:
            try:
                rows = soak.sql(
                    "SELECT count(*) FILTER (WHERE status = 'done' AND agent NOT LIKE '%/child/%'),"
                    " count(*) FILTER (WHERE status = 'running') FROM wakes WHERE tenant = :t"
                )
            except OperationalError:
                return False
            return bool(rows[0][0] == total and rows[0][1] == 0)

        await _until(f"all {total} wakes done", settled)
    finally:
        soak.stop()
    try:
        assert len(soak.kills) == KILLS and soak.db_errors() > 0, (soak.kills, soak.db_errors())
        _assert_each_step_once(soak, total)
        # Every workflow that ran a wake (the agents' and the children's), every run of it.
        wids = [
            row[0] for row in soak.sql("SELECT DISTINCT workflow_id FROM wakes WHERE tenant = :t")
        ]
        assert {workflow_id(tenant, a) for a in AGENTS} <= set(wids)
        replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter)
        for wid in wids:
            for history in await _all_runs(client, wid):
                await replayer.replay_workflow(history)
    finally:
        for wid in [workflow_id(tenant, a) for a in AGENTS]:
            try:
                await client.get_workflow_handle(wid).terminate("soak finished")
            except RPCError:
                pass
        store.close()


def _assert_each_step_once(soak: Soak, total: int) -> None:
    statuses = dict(soak.sql("SELECT status, count(*) FROM wakes WHERE tenant = :t GROUP BY 1"))
    children = soak.sql("SELECT count(*) FROM wakes WHERE tenant = :t AND agent LIKE '%/child/%'")
    delegations = total // len(MESSAGES)
    assert children[0][0] == delegations, children
    assert statuses == {"done": total + delegations}, statuses
    # One wake per trigger: no idempotency key woke an agent twice.
    assert not soak.sql(
        "SELECT agent, idempotency_key FROM wakes WHERE tenant = :t AND idempotency_key IS NOT NULL"
        " GROUP BY 1, 2 HAVING count(*) > 1"
    )
    # Each step once: one event per step key, one compile and one model call per call index.
    assert not soak.sql(
        "SELECT step_key FROM events WHERE tenant = :t GROUP BY 1 HAVING count(*) > 1"
    )
    for table in ("compiles", "model_calls"):
        assert not soak.sql(
            f"SELECT wake_id, call_index FROM {table} WHERE tenant = :t GROUP BY 1, 2"
            " HAVING count(*) > 1"
        ), table
    # Every wake: two model calls (the tool call, the answer), one tool call, one result.
    per_wake = soak.sql(
        "SELECT w.wake_id,"
        " (SELECT count(*) FROM model_calls m WHERE m.tenant = w.tenant AND m.wake_id = w.wake_id),"
        " (SELECT count(*) FROM events e WHERE e.tenant = w.tenant AND e.wake_id = w.wake_id"
        "   AND e.kind = 'tool_call'),"
        " (SELECT count(*) FROM events e WHERE e.tenant = w.tenant AND e.wake_id = w.wake_id"
        "   AND e.kind = 'tool_result')"
        " FROM wakes w WHERE w.tenant = :t"
    )
    odd = [row for row in per_wake if tuple(row[1:]) != (2, 1, 1)]
    assert not odd, odd
    # ...and each tool call has exactly one result, carrying its id.
    unmatched = soak.sql(
        "SELECT c.agent, c.tool_call_id, count(r.id) FROM events c"
        " LEFT JOIN events r ON r.tenant = c.tenant AND r.agent = c.agent"
        "  AND r.kind = 'tool_result' AND r.tool_call_id = c.tool_call_id"
        " WHERE c.tenant = :t AND c.kind = 'tool_call' GROUP BY 1, 2 HAVING count(r.id) <> 1"
    )
    assert not unmatched, unmatched
    tools = dict(
        soak.sql(
            "SELECT tool_name, count(*) FROM events WHERE tenant = :t AND kind = 'tool_call'"
            " GROUP BY 1"
        )
    )
    assert tools == {"scan": total // 3, "peek": total // 3 + delegations, "delegate": delegations}
