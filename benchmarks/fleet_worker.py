"""One worker of ``wakeful bench fleet``, in a process of its own, as a deployment runs them.

``python -m benchmarks.fleet_worker CONFIG_JSON`` serves the bench's agents on its task queue
with ``latency_s`` added to every model call, until SIGTERM. On its way out it writes the
start and end (``time.time()``) of every model call it made to ``calls``, so the bench can
count the calls in flight across workers.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.providers.base import ModelProvider, ModelReply
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store
from wakeful.tokenizers import BpeCounter

__all__ = ["FleetWorkerConfig", "SlowProvider", "fleet_agents"]


@dataclass(frozen=True)
class FleetWorkerConfig:
    database_url: str
    temporal_address: str
    namespace: str
    sim_url: str
    tenant: str
    agents: int
    workspace: str
    queue: str
    threads: int
    latency_s: float
    calls: str  # where the model calls' (start, end) pairs go on exit
    sandboxed: bool = True  # False: as WAKEFUL_WORKFLOW_SANDBOX=false

    def as_json(self) -> str:
        return json.dumps(asdict(self))


def fleet_agents(tenant: str, agents: int, workspace: str) -> list[Agent]:
    """The bench's agents: the demo's instructions and file tools, all in one workspace."""
    return [
        Agent(
            name=f"agent{i:03d}",
            instructions=INSTRUCTIONS,
            tools=DEMO_TOOLS,
            workdir=workspace,
            tenant=tenant,
        )
        for i in range(agents)
    ]


@dataclass
class SlowProvider:
    """The real provider, ``latency_s`` slower per call, keeping each call's start and end."""

    inner: ModelProvider
    latency_s: float
    name: str = "anthropic"
    spans: list[tuple[float, float]] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        began = time.time()
        try:
            await asyncio.sleep(self.latency_s)
            return await self.inner.complete(request)
        finally:
            self.spans.append((began, time.time()))


async def _serve(cfg: FleetWorkerConfig) -> list[tuple[float, float]]:
    """Serve until SIGTERM; returns the model calls' (start, end)."""
    from wakeful.worker.client import connect
    from wakeful.worker.serve import run_until_terminated
    from wakeful.worker.worker import build_worker

    store = Store.connect(cfg.database_url, migrate_schema=False)
    provider = SlowProvider(
        build_provider("anthropic", api_key=cfg.tenant, base_url=cfg.sim_url), cfg.latency_s
    )
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry(fleet_agents(cfg.tenant, cfg.agents, cfg.workspace)),
        providers=lambda name: provider,
        counter=BpeCounter(),
    )
    client = await connect(cfg.temporal_address, cfg.namespace)
    worker = build_worker(client, deps, cfg.queue, max_threads=cfg.threads, sandboxed=cfg.sandboxed)
    try:
        await run_until_terminated(worker)  # as `wakeful worker` runs: SIGTERM shuts it down
    finally:
        await provider.inner.aclose()  # type: ignore[attr-defined]
        store.close()
    return provider.spans


def main(argv: list[str]) -> None:
    cfg = FleetWorkerConfig(**json.loads(argv[1]))
    Path(cfg.calls).write_text(json.dumps(asyncio.run(_serve(cfg))))


if __name__ == "__main__":
    main(sys.argv)
