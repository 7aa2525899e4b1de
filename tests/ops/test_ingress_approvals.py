"""Waiting tool calls decided through a running ingress, by approvers with tokens of their own.

The webhook secret is not an approval: a request signed with it is refused, and so is any
other credential but a token of one of the tenant's approvers. The decision is recorded as
taken by the token's approver, whatever name the body gives.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from temporalio.testing import WorkflowEnvironment

from tests.ops.cli_env import clear_wakeful_env, one_line_error, run
from tests.ops.hooks import post
from tests.ops.ingress_setup import ingress_settings
from tests.ops.webhook_secrets import APPROVER, APPROVER_TOKEN, OTHER_APPROVER_TOKEN, SECRET
from tests.orchestration.approval_agents import SCRIPT, Deploys
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.contracts import PendingApproval
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import Client
from wakeful.worker.ingress_approvers import Approvers
from wakeful.worker.settings import Settings

ServeIngress = Callable[..., Awaitable[httpx.AsyncClient]]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _decide(
    http: httpx.AsyncClient, agent: Agent, body: dict[str, Any], token: str = APPROVER_TOKEN
) -> httpx.Response:
    return await http.post(
        f"/approvals/{agent.name}", content=json.dumps(body).encode(), headers=_bearer(token)
    )


def _refused(response: httpx.Response, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert "\n" not in response.json()["message"]


async def _waiting(client: Client, agent: Agent) -> PendingApproval:
    for _ in range(600):  # bounded: the wake reaches the call
        if pending := await client.pending(agent):
            (item,) = pending
            return item
        await asyncio.sleep(0.05)
    raise AssertionError("the deploy call never waited for approval")


async def test_a_webhook_signature_decides_nothing_and_the_token_names_the_approver(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    serve_ingress: ServeIngress,
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store)
    http = await serve_ingress(ingress_settings(agent))  # the agent's tenant is the default
    path = f"/approvals/{agent.name}"
    async with worker(temporal_dev.client, store, [agent], sim, script=SCRIPT) as (q, _):
        client = Client(temporal_dev.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        item = await _waiting(client, agent)
        deny = {"call_id": item.call_id, "approved": False, "reason": "frozen"}
        raw = json.dumps(deny | {"by": "ops"}).encode()

        # The attack: a webhook sender's signature, naming whoever it likes.
        _refused(await post(http, path, raw), 401, "webhook_signature")
        _refused(await http.post(path, content=raw), 401, "missing_credential")
        headers = {"Authorization": f"Basic {SECRET}"}
        _refused(await http.post(path, content=raw, headers=headers), 401, "malformed_credential")
        _refused(await _decide(http, agent, deny, token=SECRET), 401, "bad_credential")
        _refused(await _decide(http, agent, deny, OTHER_APPROVER_TOKEN), 403, "wrong_tenant")
        _refused(await _decide(http, agent, deny | {"by": "mallory"}), 403, "approver_mismatch")
        _refused(await _decide(http, agent, {"call_id": 1}), 422, "invalid_decision")
        _refused(await _decide(http, agent, {"call_id": "x", "approved": True}), 409, "not_waiting")
        assert await client.pending(agent) == [item]  # nothing was decided yet

        decided = await _decide(http, agent, deny)
        assert decided.status_code == 200, decided.text
        assert decided.json() == {
            "status": "denied",
            "call_id": item.call_id,
            "tool": "deploy",
            "wake_id": item.wake_id,
            "by": APPROVER,
        }
        _refused(await _decide(http, agent, deny), 409, "not_waiting")  # decides nothing twice
        result = await handle.result()
    assert (result.status, deploys.runs) == ("done", [])
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    assert [e.text for e in events if e.kind == "tool_result"] == ["denied by ops: frozen"]


async def test_an_approval_records_the_tokens_approver(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    serve_ingress: ServeIngress,
) -> None:
    deploys = Deploys()
    agent = deploys.agent(store)
    http = await serve_ingress(ingress_settings(agent))
    async with worker(temporal_dev.client, store, [agent], sim, script=SCRIPT) as (q, _):
        client = Client(temporal_dev.client, task_queue=q)
        handle = await client.start(agent, "Deploy billing v42.")
        item = await _waiting(client, agent)
        # The body may repeat the approver's own name.
        approve = {"call_id": item.call_id, "approved": True, "by": APPROVER}
        decided = await _decide(http, agent, approve)
        assert decided.status_code == 200, decided.text
        result = await handle.result()
    assert (result.status, deploys.runs) == ("done", ["billing@v42"])
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    (done,) = [e for e in events if e.kind == "tool_result"]
    assert done.meta["approved_by"] == APPROVER


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"approval_tokens": {"ops": SECRET}}, "must be 32-512"),  # short, and the secret
        ({"approval_tokens": {"ops": "w" * 40}, "webhook_secret": "w" * 40}, "webhook secret"),
        ({"approval_tokens": {"a": "t" * 40, "b": "t" * 40}}, "share a token"),
        ({"approval_tokens": {"has space": "t" * 40}}, "approver name"),
        ({"approval_tenant_tokens": {"corp:ops": {"a": "t" * 40}}}, "tenant name"),
    ],
)
def test_an_approval_token_is_a_credential_of_its_own(values: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        Settings(**values)


def test_approvals_token_makes_a_setting_the_ingress_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clear_wakeful_env(monkeypatch)
    made = run(["approvals", "token", "ana"], {})
    assert made.exit_code == 0, made.output
    tokens = json.loads(made.stdout)
    approvers = Approvers.from_settings(Settings(approval_tokens=tokens))
    headers = {"Authorization": f"Bearer {tokens['ana']}"}
    assert approvers.identify("default", headers) == "ana"
    one_line_error(run(["approvals", "token", "no one"], {}), 2, "approver name")
