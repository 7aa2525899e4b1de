"""Health probes for containers and scripts: can this process reach what it needs?

``wakeful health`` runs them; docker-compose uses it as the worker's and the ingress's
healthcheck. Nothing is started here (unlike ``EmbeddedStack.up``): a probe only looks.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import psycopg
from pydantic import BaseModel

from wakeful.worker.ports import libpq_url
from wakeful.worker.settings import Settings
from wakeful.worker.stack import EmbeddedStack

__all__ = ["Health", "probe"]


class Health(BaseModel):
    """One line per check: ``ok`` or why not (never a secret or a password)."""

    checks: dict[str, str]

    @property
    def ok(self) -> bool:
        return all(v == "ok" for v in self.checks.values())


def _postgres(settings: Settings) -> str:
    url = settings.database_url
    if url is None:
        status = EmbeddedStack(settings).status().postgres
        if not status.running or status.address is None:
            return "embedded Postgres is not running (wakeful stack up)"
        url = status.address
    try:
        timeout = max(1, int(settings.connect_timeout_s))
        with psycopg.connect(libpq_url(url), connect_timeout=timeout) as conn:
            conn.execute("select 1")
    except psycopg.Error as err:
        return f"unreachable ({type(err).__name__})"
    return "ok"


async def _temporal(settings: Settings, *, pollers: bool) -> dict[str, str]:
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client

    from wakeful.worker.temporal_env import connect_config

    address = settings.temporal_address
    if address is None:
        status = EmbeddedStack(settings).status().temporal
        if not status.running or status.address is None:
            return {"temporal": "embedded Temporal is not running (wakeful stack up)"}
        address = status.address
    timeout = settings.connect_timeout_s
    out: dict[str, str] = {}
    try:
        client = await asyncio.wait_for(
            Client.connect(**connect_config(address, settings.temporal_namespace)), timeout
        )
        await client.service_client.check_health(timeout=timedelta(seconds=timeout))
        out["temporal"] = "ok"
        if pollers:
            described = await client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=settings.temporal_namespace,
                    task_queue=TaskQueue(name=settings.task_queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                ),
                timeout=timedelta(seconds=timeout),
            )
            out["worker"] = (
                "ok" if described.pollers else f"no worker polls task queue {settings.task_queue!r}"
            )
    except Exception as err:  # a probe reports; it does not raise
        out.setdefault("temporal", f"unreachable ({type(err).__name__})")
        if pollers:
            out.setdefault("worker", "unknown: Temporal unreachable")
    return out


async def _http(url: str, limit_s: float) -> str:
    try:
        async with httpx.AsyncClient(timeout=limit_s) as client:
            response = await client.get(url)
    except httpx.HTTPError as err:
        return f"unreachable ({type(err).__name__})"
    return "ok" if response.status_code == 200 else f"answered {response.status_code}"


async def probe(settings: Settings, *, url: str | None = None, worker: bool = False) -> Health:
    """Check an HTTP URL (the ingress's ``/readyz``, which checks its own dependencies), or
    else Postgres and Temporal, plus a poller on the task queue when ``worker`` is set."""
    if url is not None:
        return Health(checks={"http": await _http(url, settings.connect_timeout_s)})
    checks = {"postgres": await asyncio.to_thread(_postgres, settings)}
    checks |= await _temporal(settings, pollers=worker)
    return Health(checks=checks)
