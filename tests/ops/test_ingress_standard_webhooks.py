"""Senders with Standard Webhooks tooling sign deliveries their way (webhook-id,
webhook-timestamp, webhook-signature), signed here by the `standardwebhooks` library as such
a sender does; the same secrets, replay window and answers apply, and webhook-id is the
idempotency key when the event names none."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook
from temporalio.testing import WorkflowEnvironment

from tests.ops.hooks import signals, terminate
from tests.ops.ingress_setup import MakeIngress, ingress_settings
from tests.ops.webhook_secrets import OTHER_SECRET, SECRET
from wakeful.agents import Agent

WHSEC = "whsec_" + base64.b64encode(b"a standard webhooks key, 32 byte").decode()


def _headers(secret: str | bytes, msg_id: str, body: bytes, at: float | None = None) -> dict:
    when = datetime.fromtimestamp(at if at is not None else time.time(), UTC)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, when, body.decode()),
        "content-type": "application/json",
    }


async def test_a_standard_webhooks_delivery_is_accepted_once_keyed_by_its_id(
    temporal_dev: WorkflowEnvironment, agent: Agent, make_ingress: MakeIngress
) -> None:
    ingress = make_ingress(ingress_settings(agent))
    path = f"/hooks/{agent.name}"
    body = json.dumps({"type": "deploy.failed", "text": "deploy 812 failed"}).encode()
    try:
        # The tenant's secret is not whsec_-encoded: the library is given its bytes.
        first = await ingress.post(
            path, content=body, headers=_headers(SECRET.encode(), "m1", body)
        )
        assert first.status_code == 202, first.text
        assert first.json()["idempotency_key"] == "m1"
        again = await ingress.post(
            path, content=body, headers=_headers(SECRET.encode(), "m1", body)
        )
        assert (again.status_code, again.json()["status"]) == (200, "duplicate")
        assert await signals(temporal_dev.client, agent.tenant, agent.name) == 2
    finally:
        await terminate(temporal_dev.client, agent.tenant, agent.name)


async def test_a_whsec_secret_and_every_refusal(
    temporal_dev: WorkflowEnvironment, agent: Agent, make_ingress: MakeIngress
) -> None:
    ingress = make_ingress(ingress_settings(agent, webhook_secret=WHSEC))
    path = f"/hooks/{agent.name}"
    body = json.dumps({"id": "evt-9", "type": "alarm", "text": "disk alarm on db-2"}).encode()
    try:
        ok = await ingress.post(path, content=body, headers=_headers(WHSEC, "m9", body))
        assert ok.status_code == 202, ok.text
        assert ok.json()["idempotency_key"] == "evt-9"  # the event's own id wins

        tampered = body.replace(b"db-2", b"db-3")
        bad = await ingress.post(path, content=tampered, headers=_headers(WHSEC, "m10", body))
        assert (bad.status_code, bad.json()["error"]) == (401, "bad_signature")
        stale = await ingress.post(
            path, content=body, headers=_headers(WHSEC, "m11", body, at=time.time() - 3600)
        )
        assert (stale.status_code, stale.json()["error"]) == (401, "stale_signature")
        other = await ingress.post(
            path, content=body, headers=_headers(OTHER_SECRET.encode(), "m12", body)
        )
        assert (other.status_code, other.json()["error"]) == (403, "wrong_tenant")
        partial = _headers(WHSEC, "m13", body)
        del partial["webhook-id"]
        missing = await ingress.post(path, content=body, headers=partial)
        assert (missing.status_code, missing.json()["error"]) == (401, "malformed_signature")
        assert "webhook-id" in missing.json()["message"]
    finally:
        await terminate(temporal_dev.client, agent.tenant, agent.name)
