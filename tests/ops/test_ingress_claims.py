"""Deliveries end to end on the live stack (Postgres, the Temporal dev server, a worker and
the provider simulator): one event per key wins, nothing accepted is lost, nothing Postgres
refuses stalls an agent, and a sender's key is stored and sent nowhere."""

from __future__ import annotations

import asyncio
import json
import uuid

from temporalio.testing import WorkflowEnvironment

from tests.ops.decoded_history import history_text
from tests.ops.hooks import event, post, signals, terminate
from tests.ops.ingress_setup import LiveIngress, MakeIngress, ingress_settings
from tests.ops.stored_text import everything_stored
from wakeful.agents import Agent
from wakeful.compiler.canonical import canonical_json
from wakeful.idempotency import trigger_key
from wakeful.substrate.store import Store
from wakeful.worker.ingress_events import parse_event
from wakeful.worker.ingress_receipts import event_digest
from wakeful.workflows.agent import workflow_id


async def test_of_twenty_concurrent_deliveries_of_one_key_one_wins_and_none_vanish(
    live: LiveIngress,
) -> None:
    store, agent = live.store, live.agent
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        bodies = [event("evt-race", text=f"report {i} of the race") for i in range(20)]
        answers = await asyncio.gather(*(live.deliver(ingress, body) for body in bodies))
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [202] + [409] * 19, [a.text for a in answers]
        (winner,) = [b for b, a in zip(bodies, answers, strict=True) if a.status_code == 202]
        result = await live.woken(queue, "evt-race")
    assert result.deduplicated and result.status == "done"
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert json.loads(winner)["text"] in only.goal["text"]


async def test_same_body_concurrently_is_accepted_once_and_never_lost(live: LiveIngress) -> None:
    store, agent = live.store, live.agent
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        body = event("evt-same", text="one report, sent eight times at once")
        answers = await asyncio.gather(*(live.deliver(ingress, body) for _ in range(8)))
        assert sorted(a.status_code for a in answers) == [200] * 7 + [202]
        result = await live.woken(queue, "evt-same")
    assert result.status == "done"
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert "one report" in only.goal["text"]


async def test_a_resend_after_the_workflow_was_terminated_wakes_the_agent_once(
    live: LiveIngress,
) -> None:
    """A trigger queued in a workflow that an operator terminated is lost with it; the
    sender's resend (answered as a duplicate) delivers it again, and a further resend of
    the same event, once it woke the agent, wakes nothing."""
    store, agent = live.store, live.agent
    client = live.env.client
    key = trigger_key("webhook", "evt-lost")
    body = event("evt-lost", text="the queued report")
    async with live.serving() as q:
        ingress = live.ingress(f"nobody-polls-{q}")
        first = await live.deliver(ingress, body)
        assert first.status_code == 202
        # Nothing polls that queue: the trigger waits in the workflow, which is terminated.
        await terminate(client, agent.tenant, agent.name)
        ingress = live.ingress(q)
        resent = await live.deliver(ingress, body)
        assert (resent.status_code, resent.json()["status"]) == (200, "duplicate")
        result = await live.woken(q, "evt-lost")
        assert result.status == "done"
        again = await live.deliver(ingress, body)
        assert (again.status_code, again.json()["status"]) == (200, "duplicate")
        # A message after it is served after the duplicate was dropped.
        later = await live.deliver(ingress, event("evt-later", text="next"))
        assert later.status_code == 202
        await live.woken(q, "evt-later")
    wakes = store.tenant(agent.tenant).wakes(agent.name)
    assert [w.idempotency_key for w in wakes] == [key, trigger_key("webhook", "evt-later")]
    assert "the queued report" in wakes[0].goal["text"]


async def test_a_nul_in_the_text_wakes_the_agent_instead_of_stalling_it(live: LiveIngress) -> None:
    store, agent = live.store, live.agent
    async with live.serving() as queue:
        ingress = live.ingress(queue)
        nul = await live.deliver(ingress, event("evt-nul", text="bin\u0000ary"))
        assert nul.status_code == 202, nul.text
        after = await live.deliver(ingress, event("evt-after", text="next one"))
        assert after.status_code == 202
        first = await live.woken(queue, "evt-nul")
        second = await live.woken(queue, "evt-after")
    assert (first.status, second.status) == ("done", "done")
    wakes = store.tenant(agent.tenant).wakes(agent.name)
    assert "bin\ufffdary" in wakes[0].goal["text"]


async def test_a_canary_key_is_in_no_row_and_no_history_payload(live: LiveIngress) -> None:
    store, agent = live.store, live.agent
    canary = f"canary-{uuid.uuid4().hex}"
    client = live.env.client
    body = json.dumps({"type": "deploy.failed", "text": "deploy 9 failed"}).encode()
    async with live.serving() as q:
        ingress = live.ingress(q)
        path = f"/hooks/{agent.name}"
        accepted = await post(ingress, path, body, headers={"Idempotency-Key": canary})
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["idempotency_key"] == canary  # the sender's own key, answered
        duplicate = await post(ingress, path, body, headers={"Idempotency-Key": canary})
        assert duplicate.status_code == 200
        result = await live.woken(q, canary)
    assert result.status == "done"
    stored = everything_stored(store, agent.tenant)
    assert "deploy 9 failed" in stored  # the rows searched hold the event
    assert canary not in stored
    handle = client.get_workflow_handle(workflow_id(agent.tenant, agent.name))
    history = await history_text(await handle.fetch_history())
    assert "deploy 9 failed" in history  # the decoded payloads are really searched
    assert canary not in history


async def test_a_tool_result_equal_to_an_old_receipt_does_not_make_a_delivery_a_duplicate(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, make_ingress: MakeIngress
) -> None:
    """Receipts used to be blobs addressed by their text alone: a file a tool read whose
    text was a receipt's document made a first-ever delivery answer 200 and wake nothing."""
    body = event("evt-forged", text="first delivery")
    digest = event_digest(parse_event(body))
    ts = store.tenant(agent.tenant)
    for doc in (
        {"receipt": "webhook-event", "agent": agent.name, "key": "evt-forged", "event": digest},
        {"receipt": "webhook-key", "agent": agent.name, "key": "evt-forged"},
    ):
        ts.put_blob("tool_result", canonical_json(doc))
    ingress = make_ingress(ingress_settings(agent))
    try:
        response = await post(ingress, f"/hooks/{agent.name}", body)
        assert (response.status_code, response.json()["status"]) == (202, "accepted")
        assert await signals(temporal_dev.client, agent.tenant, agent.name) == 1
    finally:
        await terminate(temporal_dev.client, agent.tenant, agent.name)
