"""``wakeful bench fleet``: many agents woken at once, served by one worker.

A deployment's agents wake together (a schedule firing for all of them, a burst of webhooks).
Their model calls spend seconds waiting on the provider; what one worker can do meanwhile
decides how long the burst takes. Each run wakes ``agents`` agents at once, every wake
reading a file and summarising it (two model calls and a tool), against the provider
simulator with ``latency_s`` added to every model call, on the live stack (Temporal dev
server, embedded Postgres, the real worker and activities). Runs differ only in the worker's
``activity_threads`` (``WAKEFUL_ACTIVITY_THREADS``): the activities it runs at once, model
calls included.

Reported per run: ``wall_s`` (the first trigger to the last result), ``wakes_per_s``,
``wake_p50_s`` / ``wake_p90_s`` / ``wake_max_s`` (each wake from its trigger to its result),
``model_calls_in_flight_max`` (the most calls waiting on the provider at one time), and
``ideal_s``: the model latency a wake cannot avoid (its calls, one after the other).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import Any

from benchmarks.live_stack import LiveStack, live_stack, say, workspace
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.providers.base import ModelProvider, ModelReply
from wakeful.providers.registry import build_provider
from wakeful.tokenizers import BpeCounter

__all__ = ["run"]

_FILES = 10
_CALLS_PER_WAKE = 2


@dataclass
class SlowProvider:
    """The real provider, ``latency_s`` slower per call, counting the calls in flight."""

    inner: ModelProvider
    latency_s: float
    name: str = "anthropic"
    in_flight: int = 0
    peak: int = 0

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
            return await self.inner.complete(request)
        finally:
            self.in_flight -= 1


async def _burst(live: LiveStack, agents: int, latency_s: float, threads: int) -> dict[str, Any]:
    from wakeful.worker.client import wake
    from wakeful.worker.serve import register_agent
    from wakeful.worker.worker import build_worker

    tenant = f"fleet-{uuid.uuid4().hex[:8]}"
    ws = live.root / tenant
    ws.mkdir()
    workspace(ws, _FILES, 2_000)
    fleet = [
        Agent(
            name=f"agent{i:03d}",
            instructions=INSTRUCTIONS,
            tools=DEMO_TOOLS,
            workdir=str(ws),
            tenant=tenant,
        )
        for i in range(agents)
    ]
    ts = live.store.tenant(tenant)
    for agent in fleet:
        register_agent(ts, agent)
    provider = SlowProvider(
        build_provider("anthropic", api_key=tenant, base_url=live.sim_url), latency_s
    )
    deps = ActivityDeps(
        store=live.store,
        agents=AgentRegistry(fleet),
        providers=lambda name: provider,
        counter=BpeCounter(),
    )
    queue = f"fleet-{uuid.uuid4().hex[:8]}"

    async def one(i: int, agent: Agent) -> float:
        trigger = Trigger(
            goal=Goal(kind=GoalKind.MESSAGE, text=f"read_file doc{i % _FILES:02d}.md and sum up."),
            idempotency_key=f"{tenant}-{i}",
        )
        began = time.perf_counter()
        result = await wake(live.client, agent.runtime(), trigger, queue)
        if result.status != "done":
            raise RuntimeError(f"wake {result.wake_id} ended {result.status}")
        return time.perf_counter() - began

    try:
        async with build_worker(live.client, deps, queue, max_threads=threads):
            began = time.perf_counter()
            waits = sorted(await asyncio.gather(*(one(i, a) for i, a in enumerate(fleet))))
            wall = time.perf_counter() - began
    finally:
        await provider.inner.aclose()  # type: ignore[attr-defined]
    return {
        "agents": agents,
        "activity_threads": threads,
        "wall_s": round(wall, 2),
        "wakes_per_s": round(agents / wall, 2),
        "wake_p50_s": round(statistics.median(waits), 2),
        "wake_p90_s": round(waits[int(len(waits) * 0.9) - 1], 2),
        "wake_max_s": round(waits[-1], 2),
        "model_calls_in_flight_max": provider.peak,
        "ideal_s": round(_CALLS_PER_WAKE * latency_s, 2),
    }


async def _run(agents: int, latency_s: float, threads: tuple[int, ...]) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    async with live_stack("wkfleet") as live:
        for n in threads:
            say(f"{agents} agents at once, model latency {latency_s:g} s, {n} activity threads")
            runs[f"threads_{n}"] = await _burst(live, agents, latency_s, n)
    return {"agents": agents, "model_latency_s": latency_s, "runs": runs}


def run(
    agents: int = 32, latency_s: float = 1.0, threads: tuple[int, ...] = (8, 32)
) -> dict[str, Any]:
    return asyncio.run(_run(agents, latency_s, tuple(threads)))
