"""``wakeful bench fleet``: many agents woken at once, served by one worker or several.

A deployment's agents wake together (a schedule firing for all of them, a burst of webhooks).
Their model calls spend seconds waiting on the provider; what the workers can do meanwhile
decides how long the burst takes. Each run wakes ``agents`` agents at once, every wake
reading a file and summarising it (two model calls and a tool), against the provider
simulator with ``latency_s`` added to every model call, on the live stack (Temporal dev
server, embedded Postgres, the real worker and activities). The workers run in processes of
their own (``benchmarks.fleet_worker``), as a deployment runs them, all on one task queue;
the bench's process only sends the triggers and waits for the wakes. Runs differ in the
number of workers and in each worker's ``activity_threads`` (``WAKEFUL_ACTIVITY_THREADS``):
the activities it runs at once, model calls included. ``sandboxed=False`` runs the workers'
workflows outside Temporal's sandbox (``WAKEFUL_WORKFLOW_SANDBOX=false``).

Reported per run: ``wall_s`` (the first trigger to the last result), ``wakes_per_s``,
``wake_p50_s`` / ``wake_p90_s`` / ``wake_max_s`` (each wake from its trigger to its result),
each for the first burst, which starts every agent's workflow, and under ``again`` for a
second burst of the same agents, whose workflows run already,
``model_calls_in_flight_max`` (the most calls waiting on the provider at one time, across
the workers), and ``ideal_s``: the model latency a wake cannot avoid (its calls, one after
the other); ``worker_cpu_s``, the CPU time the workers spent on the burst (all of them,
Linux only): on a machine shared with other work, the figure its load disturbs least.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks import module_env
from benchmarks.fleet_worker import FleetWorkerConfig, fleet_agents
from benchmarks.live_stack import LiveStack, live_stack, say, workspace
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger

__all__ = ["peak_in_flight", "run", "run_on"]

_FILES = 10
_CALLS_PER_WAKE = 2
_START_WITHIN_S = 180.0  # a failure timeout for the worker processes to poll, not a sync point


def peak_in_flight(spans: Sequence[tuple[float, float]]) -> int:
    """The most of ``spans`` (start, end) open at one time; an end at the instant of another
    start closes first."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    open_now = peak = 0
    for _, step in edges:
        open_now += step
        peak = max(peak, open_now)
    return peak


async def _pollers(live: LiveStack, queue: str) -> int:
    """Workers polling ``queue`` for both workflow and activity tasks."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    seen: list[set[str]] = []
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        request = DescribeTaskQueueRequest(
            namespace=live.client.namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=kind,
        )
        found = await live.client.workflow_service.describe_task_queue(request)
        seen.append({p.identity for p in found.pollers})
    return len(seen[0] & seen[1])


@contextlib.contextmanager
def _processes(configs: list[FleetWorkerConfig]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The worker processes for the block; then stopped (SIGTERM, killed after 60 s)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.fleet_worker", cfg.as_json()],
            env=module_env(),
            stdout=sys.stderr,
        )
        for cfg in configs
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _cpu_s(procs: list[subprocess.Popen[bytes]]) -> float | None:
    """The CPU seconds (user and system) the processes have used so far; None where
    ``/proc`` does not say (not Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for proc in procs:
        try:
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def _calls(configs: list[FleetWorkerConfig]) -> list[tuple[float, float]]:
    """Every model call's (start, end), as the stopped workers wrote them."""
    spans: list[tuple[float, float]] = []
    for cfg in configs:
        calls = Path(cfg.calls)
        if calls.exists():
            spans.extend((s, e) for s, e in json.loads(calls.read_text()))
    return spans


async def _all_polling(live: LiveStack, procs: list[subprocess.Popen[bytes]], queue: str) -> None:
    """Return once every worker polls ``queue``, so the burst is not all the first one's."""
    deadline = time.monotonic() + _START_WITHIN_S
    while await _pollers(live, queue) < len(procs):
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"a fleet worker exited ({proc.returncode}) at start")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the fleet's workers did not poll within {_START_WITHIN_S:g} s")
        await asyncio.sleep(0.2)


async def _burst(
    live: LiveStack,
    agents: int,
    latency_s: float,
    threads: int,
    workers: int = 1,
    sandboxed: bool = True,
) -> dict[str, Any]:
    from wakeful.worker.client import wake
    from wakeful.worker.serve import register_agent

    tenant = f"fleet-{uuid.uuid4().hex[:8]}"
    ws = live.root / tenant
    ws.mkdir()
    workspace(ws, _FILES, 2_000)
    fleet = fleet_agents(tenant, agents, str(ws))
    ts = live.store.tenant(tenant)
    for agent in fleet:
        register_agent(ts, agent)
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    configs = [
        FleetWorkerConfig(
            database_url=live.database_url,
            temporal_address=live.client.service_client.config.target_host,
            namespace=live.client.namespace,
            sim_url=live.sim_url,
            tenant=tenant,
            agents=agents,
            workspace=str(ws),
            queue=queue,
            threads=threads,
            latency_s=latency_s,
            calls=str(ws / f"worker-{n}.calls.json"),
            sandboxed=sandboxed,
        )
        for n in range(workers)
    ]

    async def one(i: int, key: str) -> float:
        trigger = Trigger(
            goal=Goal(kind=GoalKind.MESSAGE, text=f"read_file doc{i % _FILES:02d}.md and sum up."),
            idempotency_key=f"{tenant}-{key}-{i}",
        )
        began = time.perf_counter()
        result = await wake(live.client, fleet[i].runtime(), trigger, queue)
        if result.status != "done":
            raise RuntimeError(f"wake {result.wake_id} ended {result.status}")
        return time.perf_counter() - began

    async def burst(procs: list[subprocess.Popen[bytes]], key: str) -> dict[str, Any]:
        cpu_before = _cpu_s(procs)
        began = time.perf_counter()
        waits = sorted(await asyncio.gather(*(one(i, key) for i in range(agents))))
        wall = time.perf_counter() - began
        cpu_after = _cpu_s(procs)
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        return {
            "wall_s": round(wall, 2),
            "wakes_per_s": round(agents / wall, 2),
            "wake_p50_s": round(statistics.median(waits), 2),
            "wake_p90_s": round(waits[int(len(waits) * 0.9) - 1], 2),
            "wake_max_s": round(waits[-1], 2),
            "worker_cpu_s": None if cpu is None else round(cpu, 2),
        }

    with _processes(configs) as procs:
        await _all_polling(live, procs, queue)
        first = await burst(procs, "first")
        # The same agents again: their workflows run already, cached on the workers (the
        # first burst started each one, in a sandbox of its own).
        again = await burst(procs, "again")
    spans = _calls(configs)
    return {
        "agents": agents,
        "workers": workers,
        "activity_threads": threads,
        "sandboxed": sandboxed,
        **first,
        "model_calls_in_flight_max": peak_in_flight(spans),
        "ideal_s": round(_CALLS_PER_WAKE * latency_s, 2),
        "again": again,
    }


async def run_on(
    live: LiveStack,
    agents: int = 32,
    latency_s: float = 1.0,
    threads: tuple[int, ...] = (8, 32),
    workers: tuple[int, ...] = (1,),
    sandboxed: bool = True,
) -> dict[str, Any]:
    """:func:`run` on a live stack already up; each run keeps to a tenant and a task queue
    of its own on it."""
    runs: dict[str, Any] = {}
    for w in workers:
        for n in threads:
            say(
                f"{agents} agents at once, model latency {latency_s:g} s, {w} worker(s)"
                f" of {n} activity threads"
            )
            name = f"threads_{n}" if w == 1 else f"workers_{w}_threads_{n}"
            runs[name] = await _burst(live, agents, latency_s, n, w, sandboxed)
    return {"agents": agents, "model_latency_s": latency_s, "runs": runs}


async def _run(
    agents: int,
    latency_s: float,
    threads: tuple[int, ...],
    workers: tuple[int, ...],
    sandboxed: bool,
) -> dict[str, Any]:
    async with live_stack("wkfleet") as live:
        return await run_on(live, agents, latency_s, threads, workers, sandboxed)


def run(
    agents: int = 32,
    latency_s: float = 1.0,
    threads: tuple[int, ...] = (8, 32),
    workers: tuple[int, ...] = (1,),
    sandboxed: bool = True,
) -> dict[str, Any]:
    return asyncio.run(_run(agents, latency_s, tuple(threads), tuple(workers), sandboxed))
