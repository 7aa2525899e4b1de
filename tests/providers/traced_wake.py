"""One wake run as ``wakeful worker`` runs it with telemetry on: a client and a worker that
carry Temporal's tracing interceptor, and the worker's dependencies reporting to it; and
the agent the telemetry tests wake, whose second tool always fails."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, open_deps
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store
from wakeful.telemetry import Telemetry
from wakeful.testing.simulator import Script, SimulatorServer
from wakeful.worker.client import connect, wake
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker


def boom(args: dict[str, Any], ctx: ToolContext) -> str:
    """A tool that always fails."""
    raise ValueError("the boom tool always fails")


def checking_agent(tenant: str, working: Tool) -> Agent:
    """``scout``, which checks things with the ``working`` tool and ``boom`` (which always
    fails, and takes the same input as ``working``)."""
    failing = Tool(name="boom", description="Fails.", input_schema=working.input_schema, fn=boom)
    return Agent(
        name="scout", instructions="You check things.", tools=(working, failing), tenant=tenant
    )


async def traced_wake(
    env: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    key: str,
    agent: Agent,
    script: list[dict[str, Any]],
    telemetry: Telemetry,
    text: str,
) -> WakeResult:
    """Register ``agent``, script the simulator's answers under ``key`` and run one wake
    of ``text`` on a task queue of its own, traced and metered by ``telemetry``."""
    register_agent(store.tenant(agent.tenant), agent)
    sim.simulator.set_script(Script.parse(script), scope=key)
    target = env.client.service_client.config.target_host
    client = await connect(
        target, env.client.namespace, interceptors=[telemetry.tracing_interceptor()]
    )
    queue = f"q-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, AgentRegistry([agent]), sim, key) as deps:
        deps.telemetry = telemetry
        async with build_worker(client, deps, queue):
            return await wake(client, agent.runtime(), message(text), queue)
