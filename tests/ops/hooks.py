"""Helpers to sign and send deliveries, and to see whether anything reached Temporal."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from tests.ops.webhook_secrets import SECRET
from wakeful.worker.ingress_auth import signature_header
from wakeful.workflows.agent import workflow_id


def event(key: str = "evt-1", text: str = "deploy 812 failed", **fields: Any) -> bytes:
    return json.dumps({"id": key, "type": "deploy.failed", "text": text, **fields}).encode()


def signed(
    body: bytes, secrets: str | list[str] = SECRET, *, at: float | None = None
) -> dict[str, str]:
    t = int(time.time() if at is None else at)
    return {"X-Wakeful-Signature": signature_header(secrets, t, body)}


async def post(
    client: httpx.AsyncClient,
    path: str,
    body: bytes,
    secrets: str | list[str] = SECRET,
    *,
    at: float | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return await client.post(
        path, content=body, headers=signed(body, secrets, at=at) | (headers or {})
    )


async def signals(client: Client, tenant: str, agent: str) -> int | None:
    """How many triggers reached the agent's workflow; None if it was never started."""
    handle = client.get_workflow_handle(workflow_id(tenant, agent))
    try:
        history = await handle.fetch_history()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    return sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    )


async def terminate(client: Client, tenant: str, agent: str) -> None:
    """Workflows started by tests that run no worker are ended, not left pending."""
    try:
        await client.get_workflow_handle(workflow_id(tenant, agent)).terminate("test over")
    except RPCError:
        pass
