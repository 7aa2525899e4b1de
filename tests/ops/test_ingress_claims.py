"""Deliveries end to end on the live stack (Postgres, the Temporal dev server, a worker and
the provider simulator): one event per key wins, nothing accepted is lost, nothing Postgres
refuses stalls an agent, and a sender's key is stored and sent nowhere."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import select
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import running_worker
from tests.ops.conftest import MakeIngress, ingress_settings
from tests.ops.decoded_history import history_text
from tests.ops.hooks import event, post, signals, terminate
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.compiler.canonical import canonical_json
from wakeful.contracts import Trigger, WakeResult
from wakeful.idempotency import trigger_key
from wakeful.substrate import schema
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.ingress_events import parse_event
from wakeful.worker.ingress_receipts import event_digest
from wakeful.workflows.agent import workflow_id

# A failure timeout only: a wake on the simulator takes a second or two.
WAKE_WITHIN_S = 90


async def _woken(env: WorkflowEnvironment, agent: Agent, queue: str, key: str) -> WakeResult:
    """The wake a delivery with ``key`` made (the probe shares its key, so it is answered
    with that wake once it has run, and wakes nothing of its own)."""
    probe = Trigger(goal=Goal(kind=GoalKind.WEBHOOK, text="-"), idempotency_key=key)
    return await asyncio.wait_for(
        wake(env.client, agent.runtime(), probe, queue), timeout=WAKE_WITHIN_S
    )


@asynccontextmanager
async def _serving(
    env: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> AsyncIterator[str]:
    """A worker serving ``agent`` on a task queue of its own; yields the queue."""
    registry = AgentRegistry([agent])
    async with running_worker(env.client, store, registry, sim, uuid.uuid4().hex) as queue:
        yield queue


async def test_of_twenty_concurrent_deliveries_of_one_key_one_wins_and_none_vanish(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> None:
    async with _serving(temporal_dev, store, sim, agent) as queue:
        ingress = make_ingress(ingress_settings(agent, task_queue=queue))
        bodies = [event("evt-race", text=f"report {i} of the race") for i in range(20)]
        answers = await asyncio.gather(
            *(post(ingress, f"/hooks/{agent.name}", body) for body in bodies)
        )
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [202] + [409] * 19, [a.text for a in answers]
        (winner,) = [b for b, a in zip(bodies, answers, strict=True) if a.status_code == 202]
        result = await _woken(temporal_dev, agent, queue, trigger_key("webhook", "evt-race"))
    assert result.deduplicated and result.status == "done"
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert json.loads(winner)["text"] in only.goal["text"]


async def test_same_body_concurrently_is_accepted_once_and_never_lost(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> None:
    async with _serving(temporal_dev, store, sim, agent) as queue:
        ingress = make_ingress(ingress_settings(agent, task_queue=queue))
        body = event("evt-same", text="one report, sent eight times at once")
        answers = await asyncio.gather(
            *(post(ingress, f"/hooks/{agent.name}", body) for _ in range(8))
        )
        assert sorted(a.status_code for a in answers) == [200] * 7 + [202]
        result = await _woken(temporal_dev, agent, queue, trigger_key("webhook", "evt-same"))
    assert result.status == "done"
    (only,) = store.tenant(agent.tenant).wakes(agent.name)
    assert "one report" in only.goal["text"]


async def test_a_resend_after_the_workflow_was_terminated_wakes_the_agent_once(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> None:
    """A trigger queued in a workflow that an operator terminated is lost with it; the
    sender's resend (answered as a duplicate) delivers it again, and a further resend of
    the same event, once it woke the agent, wakes nothing."""
    client = temporal_dev.client
    key = trigger_key("webhook", "evt-lost")
    body = event("evt-lost", text="the queued report")
    async with _serving(temporal_dev, store, sim, agent) as q:
        ingress = make_ingress(ingress_settings(agent, task_queue=f"nobody-polls-{q}"))
        first = await post(ingress, f"/hooks/{agent.name}", body)
        assert first.status_code == 202
        # Nothing polls that queue: the trigger waits in the workflow, which is terminated.
        await terminate(client, agent.tenant, agent.name)
        ingress = make_ingress(ingress_settings(agent, task_queue=q))
        resent = await post(ingress, f"/hooks/{agent.name}", body)
        assert (resent.status_code, resent.json()["status"]) == (200, "duplicate")
        result = await _woken(temporal_dev, agent, q, key)
        assert result.status == "done"
        again = await post(ingress, f"/hooks/{agent.name}", body)
        assert (again.status_code, again.json()["status"]) == (200, "duplicate")
        # A message after it is served after the duplicate was dropped.
        later = await post(ingress, f"/hooks/{agent.name}", event("evt-later", text="next"))
        assert later.status_code == 202
        await _woken(temporal_dev, agent, q, trigger_key("webhook", "evt-later"))
    wakes = store.tenant(agent.tenant).wakes(agent.name)
    assert [w.idempotency_key for w in wakes] == [key, trigger_key("webhook", "evt-later")]
    assert "the queued report" in wakes[0].goal["text"]


async def test_a_nul_in_the_text_wakes_the_agent_instead_of_stalling_it(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> None:
    async with _serving(temporal_dev, store, sim, agent) as queue:
        ingress = make_ingress(ingress_settings(agent, task_queue=queue))
        nul = await post(ingress, f"/hooks/{agent.name}", event("evt-nul", text="bin\u0000ary"))
        assert nul.status_code == 202, nul.text
        after = await post(ingress, f"/hooks/{agent.name}", event("evt-after", text="next one"))
        assert after.status_code == 202
        first = await _woken(temporal_dev, agent, queue, trigger_key("webhook", "evt-nul"))
        second = await _woken(temporal_dev, agent, queue, trigger_key("webhook", "evt-after"))
    assert (first.status, second.status) == ("done", "done")
    wakes = store.tenant(agent.tenant).wakes(agent.name)
    assert "bin\ufffdary" in wakes[0].goal["text"]


async def test_a_canary_key_is_in_no_row_and_no_history_payload(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    make_ingress: MakeIngress,
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    client = temporal_dev.client
    body = json.dumps({"type": "deploy.failed", "text": "deploy 9 failed"}).encode()
    async with _serving(temporal_dev, store, sim, agent) as q:
        ingress = make_ingress(ingress_settings(agent, task_queue=q))
        path = f"/hooks/{agent.name}"
        accepted = await post(ingress, path, body, headers={"Idempotency-Key": canary})
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["idempotency_key"] == canary  # the sender's own key, answered
        duplicate = await post(ingress, path, body, headers={"Idempotency-Key": canary})
        assert duplicate.status_code == 200
        result = await _woken(temporal_dev, agent, q, trigger_key("webhook", canary))
    assert result.status == "done"
    rows: list[str] = []
    with store.engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            if "tenant" in table.c:
                found = conn.execute(select(table).where(table.c.tenant == agent.tenant))
                rows += [json.dumps(dict(r._mapping), default=str) for r in found]
    stored = "\n".join(rows)
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
