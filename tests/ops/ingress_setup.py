"""An ingress in front of an agent: its settings, and the live stack a delivery is woken on.

The ingress runs in-process (httpx's ASGI transport), or served by uvicorn on a real socket
as ``wakeful ingress serve`` serves it (:func:`served`); ``LiveIngress`` adds a worker on a
task queue of its own, so a delivery becomes a real wake on the simulator.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import running_worker
from tests.ops.hooks import post
from tests.ops.webhook_secrets import (
    APPROVER,
    APPROVER_TOKEN,
    OTHER_APPROVER,
    OTHER_APPROVER_TOKEN,
    OTHER_SECRET,
    OTHER_TENANT,
    SECRET,
)
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger, WakeResult
from wakeful.idempotency import trigger_key
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.ingress_server import server_config
from wakeful.worker.settings import Settings

MakeIngress = Callable[..., httpx.AsyncClient]

# Failure timeouts only: a wake on the simulator takes a second or two, a server starts in
# a fraction of one.
WAKE_WITHIN_S = 90
START_WITHIN_S = 30


@asynccontextmanager
async def served(app: Any, host: str = "127.0.0.1", **config: Any) -> AsyncIterator[str]:
    """``app`` served by uvicorn with the ingress's server configuration (``config``: the
    keyword arguments of ``server_config``) on a free port of ``host``; yields its base URL."""
    server = uvicorn.Server(server_config(app, log_level="warning", **config))
    sock = socket.socket()
    sock.bind((host, 0))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(START_WITHIN_S):
            while not server.started:  # polled: uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await serving
        sock.close()


def ingress_settings(agent: Agent, **overrides: Any) -> Settings:
    """The agent's tenant is the default tenant; ``acme`` is another tenant with its own
    secret. Each has one approver."""
    values: dict[str, Any] = {
        "tenant": agent.tenant,
        "webhook_secret": SECRET,
        "webhook_tenant_secrets": {OTHER_TENANT: OTHER_SECRET},
        "approval_tokens": {APPROVER: APPROVER_TOKEN},
        "approval_tenant_tokens": {OTHER_TENANT: {OTHER_APPROVER: OTHER_APPROVER_TOKEN}},
        "webhook_max_body_bytes": 4096,
        "task_queue": f"q-{uuid.uuid4().hex[:8]}",
    }
    return Settings(**(values | overrides))


@dataclass(frozen=True)
class LiveIngress:
    """One agent on the live stack (Postgres, the Temporal dev server, the simulator), with
    ingresses that deliver to it and a worker that wakes it."""

    env: WorkflowEnvironment
    store: Store
    sim: SimulatorServer
    agent: Agent
    make_ingress: MakeIngress

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """A worker serving the agent on a task queue of its own; yields the queue."""
        registry = AgentRegistry([self.agent])
        async with running_worker(
            self.env.client, self.store, registry, self.sim, uuid.uuid4().hex
        ) as queue:
            yield queue

    def ingress(self, task_queue: str) -> httpx.AsyncClient:
        """An ingress that delivers the agent's events to ``task_queue``."""
        return self.make_ingress(ingress_settings(self.agent, task_queue=task_queue))

    async def deliver(
        self, ingress: httpx.AsyncClient, body: bytes, **kwargs: Any
    ) -> httpx.Response:
        """Post the signed ``body`` to the agent's hook (``kwargs`` as for ``hooks.post``)."""
        return await post(ingress, f"/hooks/{self.agent.name}", body, **kwargs)

    async def woken(self, queue: str, event_key: str) -> WakeResult:
        """The wake the webhook event ``event_key`` made (the probe shares its key, so it is
        answered with that wake once it has run, and wakes nothing of its own)."""
        probe = Trigger(
            goal=Goal(kind=GoalKind.WEBHOOK, text="-"),
            idempotency_key=trigger_key("webhook", event_key),
        )
        return await asyncio.wait_for(
            wake(self.env.client, self.agent.runtime(), probe, queue), timeout=WAKE_WITHIN_S
        )
