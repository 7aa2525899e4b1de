"""Valid deliveries: acknowledged only once Temporal has them, and one event wakes one wake."""

from __future__ import annotations

import dataclasses
import json

import httpx
from sqlalchemy import create_engine
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.ops.hooks import event, post, signals, signed, terminate
from tests.ops.ingress_setup import LiveIngress, MakeIngress, ingress_settings
from tests.ops.webhook_secrets import SECRET
from wakeful.agents import Agent
from wakeful.idempotency import trigger_key
from wakeful.substrate.store import Store
from wakeful.worker.client import connect
from wakeful.worker.ports import find_free_port
from wakeful.worker.serve import register_agent

KEY = trigger_key("webhook", "evt-42")


async def test_a_valid_delivery_wakes_the_agent_exactly_once(live: LiveIngress) -> None:
    client, store, agent = live.env.client, live.store, live.agent
    body = event("evt-42", text="The nightly build broke: list_dir . to see what is there.")
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        path = f"/hooks/{agent.name}"
        first = await post(ingress, path, body)
        assert first.status_code == 202, first.text
        assert first.json() == {
            "status": "accepted",
            "tenant": agent.tenant,
            "agent": agent.name,
            "idempotency_key": "evt-42",
        }
        # The sender retries (new signature), a proxy replays the exact request, and the
        # sender re-serialises the same event: all acknowledged as duplicates (and delivered
        # again, which the workflow drops: its key was seen).
        retry = await post(ingress, path, body)
        replay = await ingress.post(path, content=body, headers=first.request.headers)
        reordered = json.dumps(json.loads(body), sort_keys=True, indent=2).encode()
        again = await post(ingress, path, reordered)
        for answer in (retry, replay, again):
            assert (answer.status_code, answer.json()["status"]) == (200, "duplicate")
        # The same key for a different event is a conflict, never a second wake.
        conflict = await post(ingress, path, event("evt-42", text="something else"))
        assert (conflict.status_code, conflict.json()["error"]) == (409, "key_conflict")

        # Wait for the wake through the same key: the workflow answers with the one wake.
        result = await live.woken(queue, "evt-42")

    assert result.deduplicated and result.status == "done"
    assert result.tool_calls == 1  # the model acted on the event's text
    ts = store.tenant(agent.tenant)
    (only,) = ts.wakes(agent.name)
    assert only.idempotency_key == KEY
    assert only.goal["kind"] == "webhook"
    assert "The nightly build broke" in only.goal["text"]
    steps = [e.step_key for e in ts.events(agent.name)]
    assert len(steps) == len(set(steps))
    assert await signals(client, agent.tenant, agent.name) == 4  # the first and 3 duplicates


async def test_tenant_route_rotation_and_header_key(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, make_ingress: MakeIngress
) -> None:
    """Another tenant's URL with its own secret, two v1 values, and an Idempotency-Key."""
    settings = ingress_settings(
        agent, tenant="default", webhook_tenant_secrets={agent.tenant: "tenant-secret-1"}
    )
    ingress = make_ingress(settings)
    body = json.dumps({"type": "ticket.opened", "payload": {"ticket": 7}}).encode()
    try:
        response = await post(
            ingress,
            f"/hooks/{agent.tenant}/{agent.name}",
            body,
            ["retired-secret", "tenant-secret-1"],
            headers={"Idempotency-Key": "tkt-7"},
        )
        assert response.status_code == 202, response.text
        assert response.json()["idempotency_key"] == "tkt-7"
        assert await signals(temporal_dev.client, agent.tenant, agent.name) == 1
        # The default tenant's route does not reach this agent (it lives in another tenant).
        other = await post(
            ingress, f"/hooks/{agent.name}", body, SECRET, headers={"Idempotency-Key": "tkt-8"}
        )
        assert (other.status_code, other.json()["error"]) == (404, "unknown_agent")
    finally:
        await terminate(temporal_dev.client, agent.tenant, agent.name)


async def test_temporal_down_is_503_and_accepts_nothing_until_it_returns(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, make_ingress: MakeIngress
) -> None:
    dead = find_free_port(range(47000, 47100))
    assert dead is not None
    attempts: list[str] = []

    async def flaky_temporal() -> Client:
        attempts.append("connect")
        if len(attempts) == 1:
            return await connect(f"127.0.0.1:{dead}", "default")  # nothing listens there
        return temporal_dev.client

    from wakeful.worker.ingress import create_app

    app = create_app(ingress_settings(agent, connect_timeout_s=2.0), flaky_temporal, store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as c:
        try:
            down = await post(c, f"/hooks/{agent.name}", event("evt-9"))
            assert (down.status_code, down.json()["error"]) == (503, "unavailable")
            assert down.headers["retry-after"] == "5"
            assert str(dead) not in down.text
            assert await signals(temporal_dev.client, agent.tenant, agent.name) is None
            # No receipt was written: the sender's retry is delivered, not called a duplicate.
            back = await post(c, f"/hooks/{agent.name}", event("evt-9"))
            assert back.status_code == 202
            assert await signals(temporal_dev.client, agent.tenant, agent.name) == 1
        finally:
            await terminate(temporal_dev.client, agent.tenant, agent.name)


async def test_database_down_is_503_without_leaking_the_url(
    temporal_dev: WorkflowEnvironment, agent: Agent
) -> None:
    from wakeful.worker.ingress import create_app

    url = "postgresql+psycopg://wakeful:pw-do-not-leak@127.0.0.1:1/nowhere?connect_timeout=2"
    store = Store(create_engine(url))

    async def temporal() -> Client:
        return temporal_dev.client

    app = create_app(ingress_settings(agent), temporal, store)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as c:
        body = event()
        response = await c.post(f"/hooks/{agent.name}", content=body, headers=signed(body))
        ready = await c.get("/readyz")
        health = await c.get("/healthz")
    assert (response.status_code, response.json()["error"]) == (503, "unavailable")
    assert "pw-do-not-leak" not in response.text and "127.0.0.1" not in response.text
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not_ready",
        "checks": {"postgres": "unreachable", "temporal": "ok"},
    }
    assert health.status_code == 200
    assert await signals(temporal_dev.client, agent.tenant, agent.name) is None
    store.close()


async def test_ready_when_postgres_and_temporal_answer(
    agent: Agent, make_ingress: MakeIngress
) -> None:
    ingress = make_ingress(ingress_settings(agent))
    ready = await ingress.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"postgres": "ok", "temporal": "ok"}}
    spec = (await ingress.get("/openapi.json")).json()
    hook = spec["paths"]["/hooks/{agent}"]["post"]
    schema = hook["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["type"] and schema["additionalProperties"] is False
    assert {"202", "401", "403", "404", "409", "413", "422", "503"} <= set(hook["responses"])


async def test_a_delivery_for_a_user_wakes_the_agent_for_that_user(live: LiveIngress) -> None:
    """The body's ``user`` travels with the wake: what it writes is that user's."""
    store, agent = live.store, live.agent
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        body = event("evt-user", text="The billing job failed for my account.", user="alice")
        accepted = await post(ingress, f"/hooks/{agent.name}", body)
        assert accepted.status_code == 202, accepted.text
        result = await live.woken(queue, "evt-user")
    assert result.status == "done"
    ts = store.tenant(agent.tenant)
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert events and {e.user_id for e in events} == {"alice"}


async def test_an_agents_own_redaction_settings_apply_to_its_webhooks(live: LiveIngress) -> None:
    """``Agent(redaction={"email": True})`` switches the email rule on for what its tools
    return and for what its webhooks say: the address never reaches the substrate."""
    agent = dataclasses.replace(live.agent, redaction={"email": True})
    register_agent(live.store.tenant(agent.tenant), agent)  # as `wakeful worker` does
    live = dataclasses.replace(live, agent=agent)
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        body = event("evt-mail", text="Refund requested by dana.reyes@example.com for order 77.")
        accepted = await post(ingress, f"/hooks/{agent.name}", body)
        assert accepted.status_code == 202, accepted.text
        result = await live.woken(queue, "evt-mail")
    assert result.status == "done"
    stored = " ".join(e.text for e in live.store.tenant(agent.tenant).events(agent.name))
    assert "dana.reyes@example.com" not in stored
    assert "[REDACTED:email]" in stored and "order 77" in stored
