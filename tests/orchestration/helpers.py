"""Helpers for orchestration tests: agents, workers, and waiting on an agent workflow."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import Providers, demo_scout, message, serving
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.intent_setting import IntentModel
from wakeful.agents import Agent, AgentRegistry, Delegation, Tool, ToolContext
from wakeful.compiler import WindowPolicy
from wakeful.contracts import ChildBundle, WakeResult
from wakeful.demo.agent import seed_workspace
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.base import VectorStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import connect, wake
from wakeful.worker.search_attributes import ensure_search_attributes
from wakeful.worker.worker import build_worker
from wakeful.workflows.agent import AgentStatus, AgentWorkflow, workflow_id

T = TypeVar("T")


async def within(seconds: float, client: Client, workflow_ids: list[str], work: Awaitable[T]) -> T:
    """Await ``work`` for at most ``seconds``; past that, fail with where each workflow stands
    (status, pending activities, last history events) instead of hanging the suite."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if done:
        return task.result()
    report = [f"still waiting after {seconds:g}s"]
    for wid in workflow_ids:
        report.append(await _where(client, wid))
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise AssertionError("\n".join(report))


async def _where(client: Client, wid: str) -> str:
    handle = client.get_workflow_handle(wid)
    try:
        desc = await handle.describe()
        events = [e async for e in handle.fetch_history_events()]
    except RPCError as err:
        return f"{wid}: {err}"
    pending = [
        f"{a.activity_type.name} attempt {a.attempt} {PendingActivityState.Name(a.state)}"
        f" {a.last_failure.message}"
        for a in desc.raw_description.pending_activities
    ]
    last = [f"{e.event_id} {EventType.Name(e.event_type)}" for e in events[-15:]]
    status = desc.status.name if desc.status else "?"
    return f"{wid}: {status}; pending: {pending}; last events: {last}"


class FileFacts(BaseModel):
    """What a 'facts' child returns about one file."""

    path: str
    facts: list[str] = Field(min_length=1, max_length=5)


FACTS = Delegation(
    name="facts",
    description="Read one file and list its key facts.",
    output=FileFacts,
    tools=("read_file",),
    max_tokens=40_000,
    max_model_calls=3,
    timeout_s=120,
    max_result_chars=600,
    max_attempts=2,
)


class Gate:
    """A tool that blocks (heartbeating) until the test opens the gate."""

    def __init__(self) -> None:
        self.started, self.opened = threading.Event(), threading.Event()

    def tool(self) -> Tool:
        def wait_for_gate(args: dict[str, Any], ctx: ToolContext) -> str:
            self.started.set()
            deadline = time.monotonic() + 60  # a test that never opens it must not hang
            while not self.opened.wait(0.1):
                if time.monotonic() > deadline:
                    raise TimeoutError("the gate never opened")
                ctx.heartbeat()
            return "the gate opened"

        no_args = {"type": "object", "properties": {}}
        return Tool(
            "wait_for_gate", "Wait for the gate.", no_args, wait_for_gate, 120, 1, heartbeat_s=5
        )


def child_bundle(**fields: Any) -> ChildBundle:
    """A child's bundle for a test that builds one by hand: a ``facts`` child (``call-1``)
    of ``acme``'s ``scout``, with no tools, an empty output schema and small limits, one
    attempt, an invalid answer reported; ``fields`` sets any of these and the rest."""
    filler: dict[str, Any] = {
        "tenant": "acme",
        "parent": "scout",
        "child": "scout/child/1",
        "kind": "facts",
        "call_id": "call-1",
        "task": "t",
        "frame": "",
        "tools": (),
        "output_schema": {},
        "max_tokens": 1000,
        "max_model_calls": 2,
        "timeout_s": 60,
        "max_result_chars": 600,
        "max_attempts": 1,
        "on_invalid": "report",
    }
    return ChildBundle(**(filler | fields))


def scout(tmp_path: Path, *, tenant: str, name: str = "scout", **kw: object) -> Agent:
    """The demo's agent in a fresh workspace under ``tmp_path``, which may hand a file to a
    ``facts`` child; ``kw`` sets any other field of the agent."""
    return demo_scout(
        seed_workspace(tmp_path / "ws"), tenant, name=name, delegations=(FACTS,), **kw
    )


@asynccontextmanager
async def worker(
    client: Client,
    store: Store,
    agents: list[Agent],
    sim: SimulatorServer,
    *,
    script: Script | None = None,
    sandboxed: bool = True,
    policies: dict[str, WindowPolicy] | None = None,
    vectors: VectorStore | None = None,
    search_attributes: bool = False,
    intent_classifier: IntentModel | None = None,
) -> AsyncIterator[tuple[str, str]]:
    """A worker on a fresh queue; yields (task queue, simulator API key). ``policies`` are
    compile policies by name, besides the default; with ``vectors``, compiles retrieve;
    with ``intent_classifier``, a model names the intents of goals that came without."""
    key, queue = uuid.uuid4().hex, f"q-{uuid.uuid4().hex[:8]}"
    if script is not None:
        sim.simulator.set_script(script, scope=key)
    providers = Providers(sim, key)
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry(agents),
        providers=providers,
        counter=BpeCounter(),
        policies=dict(policies or {}),
        vectors=vectors,
        intent_classifier=intent_classifier,
    )
    if search_attributes:  # as `wakeful worker` does at start
        deps.search_attributes = await ensure_search_attributes(client)
    try:
        async with serving(build_worker(client, deps, queue, sandboxed=sandboxed)):
            try:
                yield queue, key
            finally:
                # A workflow left running with a timer and no worker would hold the
                # time-skipping server's clock still for every later test.
                for a in agents:
                    with contextlib.suppress(RPCError):
                        await agent_handle(client, a).terminate("test finished")
    finally:
        await providers.aclose()


@dataclass(frozen=True)
class Served:
    """An agent a worker serves on ``queue``, its model calls scripted under ``key``."""

    client: Client
    agent: Agent
    queue: str
    key: str

    async def ask(self, text: str, key: str | None = None) -> WakeResult:
        """Wake the agent with the message ``text`` (idempotency key ``key``, a fresh one by
        default) and return the wake's result."""
        return await wake(self.client, self.agent.runtime(), message(text, key), self.queue)


@asynccontextmanager
async def serving_agent(
    client: Client, store: Store, agent: Agent, sim: SimulatorServer, **worker_kw: Any
) -> AsyncIterator[Served]:
    """:func:`worker` for ``agent`` alone (``worker_kw``: its other options), yielding the
    agent as :class:`Served`; the agent's workflow is terminated when the block ends."""
    async with worker(client, store, [agent], sim, **worker_kw) as (queue, key):
        yield Served(client, agent, queue, key)


def the_tool_result(ts: TenantStore, agent: Agent, wake_id: str) -> StoredEvent:
    """The tool result event of the wake ``wake_id`` of ``agent``, which had one tool call:
    the unpacking fails the test if the wake stored none or several."""
    (result,) = [e for e in ts.events(agent.name, wake_id=wake_id) if e.kind == "tool_result"]
    return result


async def wakeful_client(env: WorkflowEnvironment, **connect_kw: Any) -> Client:
    """A client of ``env``'s server made as a deployment makes one, by Wakeful's
    :func:`~wakeful.worker.client.connect` (its data converter compresses payloads);
    ``connect_kw``: connect's other options."""
    target = env.client.service_client.config.target_host
    return await connect(target, env.client.namespace, **connect_kw)


def agent_handle(client: Client, agent: Agent) -> WorkflowHandle[AgentWorkflow, object]:
    return client.get_workflow_handle_for(
        AgentWorkflow.run,  # type: ignore[arg-type]
        workflow_id(agent.tenant, agent.name),
    )


async def settled(client: Client, agent: Agent, wakes: int, polls: int = 600) -> AgentStatus:
    """Poll the agent's status query until ``wakes`` wakes are done and nothing is pending."""
    handle = agent_handle(client, agent)
    status = None
    for _ in range(polls):
        try:
            status = await handle.query(AgentWorkflow.status)
        except Exception:  # not started yet
            status = None
        if (
            status is not None
            and status.wakes >= wakes
            and status.current_wake is None
            and status.pending == 0
        ):
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"agent {agent.name} never settled at {wakes} wakes: {status}")
