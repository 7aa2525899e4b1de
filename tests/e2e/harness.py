"""Helpers for end-to-end tests: a worker on a fresh task queue, triggers."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.demo.agent import INSTRUCTIONS
from wakeful.substrate.store import Store
from wakeful.testing import SimulatedProviders as Providers
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.worker import build_worker


def make_deps(
    store: Store, registry: AgentRegistry, sim: SimulatorServer, key: str
) -> ActivityDeps:
    # One API key per test: the simulator keeps caches and script cursors per key. One SDK
    # client per provider: a client dropped unclosed is closed by the SDK on whatever event
    # loop runs when it is collected, which may be a workflow's.
    return ActivityDeps(
        store=store, agents=registry, providers=Providers(sim, key), counter=BpeCounter()
    )


@asynccontextmanager
async def open_deps(
    store: Store, registry: AgentRegistry, sim: SimulatorServer, key: str
) -> AsyncIterator[ActivityDeps]:
    """:func:`make_deps`, whose SDK clients are closed when the block ends, however it ends."""
    deps = make_deps(store, registry, sim, key)
    try:
        yield deps
    finally:
        await deps.providers.aclose()  # type: ignore[attr-defined]


@asynccontextmanager
async def serving(worker: Worker, shutdown_s: float = 60) -> AsyncIterator[Worker]:
    """Run ``worker`` for the block. Its shutdown is bounded: one that does not finish
    within ``shutdown_s`` fails the test by name instead of holding the suite."""
    running = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        stopping = asyncio.create_task(worker.shutdown())
        done, _ = await asyncio.wait({stopping}, timeout=shutdown_s)
        if not done:
            raise AssertionError(
                f"worker on {worker.task_queue} did not shut down within {shutdown_s:g} s"
            )
        await stopping
        await running


@asynccontextmanager
async def running_worker(
    client: Client, store: Store, registry: AgentRegistry, sim: SimulatorServer, key: str
) -> AsyncIterator[str]:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, registry, sim, key) as deps:
        async with serving(build_worker(client, deps, queue)):
            yield queue


def message(text: str, key: str | None = None, *, new_session: bool = False) -> Trigger:
    return Trigger(
        goal=Goal(kind=GoalKind.MESSAGE, text=text),
        idempotency_key=key or uuid.uuid4().hex,
        new_session=new_session,
    )


def slow_tool(marker_dir: Path) -> Tool:
    """A tool that announces it started, then waits (heartbeating) until released."""

    def slow_scan(args: dict[str, Any], ctx: ToolContext) -> str:
        (marker_dir / f"started-{os.getpid()}-{time.monotonic_ns()}").touch()
        deadline = time.monotonic() + 60
        while not (marker_dir / "release").exists():
            if time.monotonic() > deadline:
                raise TimeoutError("never released")
            ctx.heartbeat()
            time.sleep(0.1)
        return "scan complete: 3 services healthy"

    return Tool(
        name="slow_scan",
        description="Scan the fleet (slow).",
        input_schema={"type": "object", "properties": {}},
        fn=slow_scan,
        timeout_s=120,
        heartbeat_s=2,
        max_attempts=5,
    )


def restart_agent(tenant: str, workdir: Path, marker_dir: Path) -> Agent:
    return Agent(
        name="restarter",
        instructions=INSTRUCTIONS,
        tools=(slow_tool(marker_dir),),
        workdir=str(workdir),
        tenant=tenant,
    )
