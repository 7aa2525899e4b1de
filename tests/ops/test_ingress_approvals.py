"""A waiting tool call decided through the ingress: signed as webhooks are, on the dev server."""

from __future__ import annotations

import asyncio
import json

from temporalio.testing import WorkflowEnvironment

from tests.ops.hooks import post
from tests.ops.ingress_setup import MakeIngress, ingress_settings
from tests.orchestration.approval_agents import SCRIPT, Deploys
from tests.orchestration.helpers import worker
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client


async def test_a_signed_denial_reaches_the_model_and_decides_once(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    make_ingress: MakeIngress,
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store)
    http = make_ingress(ingress_settings(agent))  # the agent's tenant is the default one
    path = f"/approvals/{agent.name}"
    async with worker(temporal_dev.client, store, [agent], sim, script=SCRIPT) as (q, _):
        client = Client(temporal_dev.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        for _ in range(600):  # bounded: the wake reaches the call
            if pending := await client.pending(agent):
                break
            await asyncio.sleep(0.05)
        (item,) = pending
        deny = json.dumps(
            {"call_id": item.call_id, "approved": False, "reason": "frozen", "by": "ops"}
        ).encode()

        unsigned = await http.post(path, content=deny)
        assert unsigned.status_code == 401
        assert (await post(http, path, b'{"call_id": 1}')).status_code == 422
        unknown = await post(http, path, json.dumps({"call_id": "x", "approved": True}).encode())
        assert (unknown.status_code, unknown.json()["error"]) == (409, "not_waiting")
        assert await client.pending(agent) == [item]  # nothing was decided yet

        decided = await post(http, path, deny)
        assert decided.status_code == 200, decided.text
        assert decided.json() == {
            "status": "denied",
            "call_id": item.call_id,
            "tool": "deploy",
            "wake_id": item.wake_id,
        }
        assert (await post(http, path, deny)).status_code == 409  # a replay decides nothing
        result = await handle.result()
    assert (result.status, deploys.runs) == ("done", [])
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    assert [e.text for e in events if e.kind == "tool_result"] == ["denied by ops: frozen"]
