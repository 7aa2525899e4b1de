"""Helpers for end-to-end tests: agents, a worker on a fresh task queue, triggers, the CLI's
settings, marker files a tool or a worker process leaves."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import CALL_MODEL, Trigger, WakeResult
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.demo.tools import DEMO_TOOLS
from wakeful.substrate.store import Store
from wakeful.testing import SimulatedProviders as Providers
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
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
    """:func:`make_deps`, whose MCP sessions (and the servers they started) and SDK clients are
    closed when the block ends, however it ends."""
    deps = make_deps(store, registry, sim, key)
    try:
        yield deps
    finally:
        try:
            deps.mcp.close()
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
    client: Client,
    store: Store,
    registry: AgentRegistry,
    sim: SimulatorServer,
    key: str,
    queue: str | None = None,
) -> AsyncIterator[str]:
    """A worker serving ``registry`` on ``queue`` (a fresh one by default) for the block, its
    model calls going to ``sim`` under API key ``key``; yields the queue."""
    queue = queue or f"q-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, registry, sim, key) as deps:
        async with serving(build_worker(client, deps, queue)):
            yield queue


RunWakes = Callable[..., Awaitable[list[WakeResult]]]


async def wakes_in_turn(
    client: Client, store: Store, sim: SimulatorServer, agent: Agent, *triggers: Trigger
) -> list[WakeResult]:
    """Wake ``agent`` with each of ``triggers`` in turn, on a worker started for it alone (a
    fresh queue, a fresh simulator API key) and stopped after; returns each wake's result."""
    registry = AgentRegistry([agent])
    async with running_worker(client, store, registry, sim, uuid.uuid4().hex) as queue:
        return [await wake(client, agent.runtime(), t, queue) for t in triggers]


def scheduled(history: WorkflowHistory, activity: str) -> list[HistoryEvent]:
    """The events of ``history`` that schedule a task of ``activity`` (its type's name)."""
    return [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == activity
    ]


def start_attempts(history: WorkflowHistory, activity: str) -> list[int]:
    """The attempt number of each start of an ``activity`` task in ``history``, in order."""
    tasks = {e.event_id for e in scheduled(history, activity)}
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in tasks
    ]


def cli_settings(
    pg_url: str, temporal: WorkflowEnvironment, state_dir: Path, tenant: str
) -> dict[str, str]:
    """The ``WAKEFUL_*`` settings that point the command line at this test's database,
    Temporal server, state directory and tenant (and Qdrant at a closed port: none runs)."""
    return {
        "WAKEFUL_DATABASE_URL": pg_url,
        "WAKEFUL_TEMPORAL_ADDRESS": temporal.client.service_client.config.target_host,
        "WAKEFUL_QDRANT_URL": "http://127.0.0.1:9",
        "WAKEFUL_STATE_DIR": str(state_dir),
        "WAKEFUL_TENANT": tenant,
    }


def cli_process_env(
    pg_url: str, temporal: WorkflowEnvironment, state_dir: Path, tenant: str
) -> dict[str, str]:
    """The environment of a ``wakeful`` subprocess: this process's, less any ``WAKEFUL_*``
    setting of its own, plus :func:`cli_settings`."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    return inherited | cli_settings(pg_url, temporal, state_dir, tenant)


def message(
    text: str, key: str | None = None, *, new_session: bool = False, user: str | None = None
) -> Trigger:
    return Trigger(
        goal=Goal(kind=GoalKind.MESSAGE, text=text),
        idempotency_key=key or uuid.uuid4().hex,
        new_session=new_session,
        user=user,
    )


def demo_scout(workdir: Path, tenant: str, *, name: str = "scout", **kw: Any) -> Agent:
    """The demo's agent (its instructions and real file tools) working in ``workdir``, in
    ``tenant``; ``kw`` sets any other field of the agent."""
    return Agent(
        name=name,
        instructions=INSTRUCTIONS,
        tools=DEMO_TOOLS,
        workdir=str(workdir),
        tenant=tenant,
        **kw,
    )


def fresh_demo_agent(root: Path, store: Store, tenant_prefix: str) -> Agent:
    """:func:`demo_scout` in a fresh tenant (``<tenant_prefix>-…``) and a fresh copy of the
    demo's workspace under ``root``, registered in ``store`` as a worker registers it."""
    agent = demo_scout(seed_workspace(root / "ws"), f"{tenant_prefix}-{uuid.uuid4().hex[:10]}")
    register_agent(store.tenant(agent.tenant), agent)
    return agent


async def wait_for_marker(
    root: Path,
    pattern: str,
    *,
    proc: subprocess.Popen[bytes] | None = None,
    timeout_s: float = 60,
) -> None:
    """Wait until a file matching ``pattern`` appears in ``root``. Fail after ``timeout_s``
    (a failure timeout, not a synchronisation), or at once if ``proc`` exits first."""
    for _ in range(int(timeout_s * 20)):
        if list(root.glob(pattern)):
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the worker process exited ({proc.returncode}) before {pattern}")
        await asyncio.sleep(0.05)
    raise AssertionError(f"{pattern} never appeared in {root}")


def slow_tool(marker_dir: Path, *, heartbeat_s: float = 2, max_attempts: int = 5) -> Tool:
    """A tool that announces it started (a file ``started-<pid>-<ns>`` in ``marker_dir``),
    then waits (heartbeating) until a file ``release`` appears there."""

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
        heartbeat_s=heartbeat_s,
        max_attempts=max_attempts,
    )


def restart_agent(
    tenant: str, workdir: Path, marker_dir: Path, *, name: str = "restarter", **kw: Any
) -> Agent:
    """An agent whose one tool is :func:`slow_tool`, for killing a worker mid-tool; ``kw``
    sets any other field of the agent."""
    return Agent(
        name=name,
        instructions=INSTRUCTIONS,
        tools=(slow_tool(marker_dir),),
        workdir=str(workdir),
        tenant=tenant,
        **kw,
    )


async def model_call_retry(client: Client, wid: str) -> Any:
    """The started event's attributes of the workflow's one model call's last attempt
    (``attempt``, and the ``last_failure`` the attempt before it ended with)."""
    history = await client.get_workflow_handle(wid).fetch_history()
    scheduled = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == CALL_MODEL
    }
    (started,) = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in scheduled
    ]
    return started
