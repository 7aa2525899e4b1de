"""On the dev server: a wake waits for the approval of its ``deploy`` call while its worker
is stopped and a new one takes the queue; the approval arrives through the CLI
(``wakeful approvals list`` shows the call, ``wakeful approve`` decides it), the wake
finishes and the tool ran exactly once. A second wake is denied through the CLI; its share
of the agent workflow's history (every event payload, decoded) stays under 4 KB."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from typer.testing import CliRunner, Result

from tests.e2e.harness import Providers, cli_settings, serving
from tests.ops.decoded_history import decoded_payloads
from tests.orchestration.approval_agents import TWO_WAKES, Deploys
from tests.orchestration.helpers import agent_handle, within
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.cli.main import app
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import Client
from wakeful.worker.worker import build_worker
from wakeful.workflows.state import workflow_id

HISTORY_LIMIT = 4 * 1024


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
    yield


async def cli(args: list[str], env: dict[str, str]) -> Result:
    # In a thread: the command runs its own event loop (asyncio.run), as it does in a shell.
    return await asyncio.to_thread(CliRunner().invoke, app, args, env=env)


async def waiting_call(client: Client, agent: Agent) -> str:
    for _ in range(600):  # bounded: the wake reaches the call
        found = await client.pending(agent)
        if found:
            return found[0].call_id
        await asyncio.sleep(0.05)
    raise AssertionError("no call waited for approval")


def worker_for(
    env: WorkflowEnvironment, store: Store, agent: Agent, providers: Providers, q: str
) -> Worker:
    deps = ActivityDeps(
        store=store, agents=AgentRegistry([agent]), providers=providers, counter=BpeCounter()
    )
    return build_worker(env.client, deps, q)


async def test_a_wake_waits_across_a_worker_restart_and_the_cli_approves_it(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
    clean_env: None,
) -> None:
    env = temporal_dev
    deploys = Deploys()
    agent = deploys.agent(store)
    queue, key = f"q-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    osim.simulator.set_script(TWO_WAKES, scope=key)
    providers = Providers(osim, key)
    cli_env = cli_settings(pg_url, env, tmp_path / "state", agent.tenant) | {
        "WAKEFUL_TEMPORAL_NAMESPACE": env.client.namespace,
        "WAKEFUL_TASK_QUEUE": queue,
    }
    client = Client(env.client, task_queue=queue)
    wid = workflow_id(agent.tenant, agent.name)
    try:
        async with serving(worker_for(env, store, agent, providers, queue)):
            handle = await client.start(agent, "Deploy billing v42.")
            await waiting_call(client, agent)
        # The first worker is gone; the wake waits in the server, holding no worker.
        async with serving(worker_for(env, store, agent, providers, queue)):
            listed = await cli(["approvals", "list", agent.name, "--json"], cli_env)
            assert listed.exit_code == 0, listed.output
            (row,) = json.loads(listed.stdout)
            assert (row["agent"], row["tool"]) == (agent.name, "deploy")
            assert row["preview"] == '{"service": "billing", "version": "v42"}'
            assert deploys.runs == []

            unknown = await cli(["approve", agent.name, "toolu_nope"], cli_env)
            assert unknown.exit_code == 2
            assert unknown.stderr.strip().startswith("error: agent 'deployer': no tool call")
            assert len(unknown.stderr.strip().splitlines()) == 1

            approved = await cli(["approve", agent.name, row["call_id"], "--by", "ana"], cli_env)
            assert approved.exit_code == 0, approved.output
            assert f"approved deploy call {row['call_id']}" in approved.stdout
            result = await within(60, env.client, [wid], handle.result())

            # A second wake, denied through the CLI: the steady-state history of one wake.
            second = await client.start(agent, "Deploy billing v42 again.")
            call_id = await waiting_call(client, agent)
            denied = await cli(
                ["approve", agent.name, call_id, "--deny", "--reason", "frozen", "--by", "bo"],
                cli_env,
            )
            assert denied.exit_code == 0, denied.output
            again = await within(60, env.client, [wid], second.result())
            history = await agent_handle(env.client, agent).fetch_history()
            await agent_handle(env.client, agent).terminate("test finished")
    finally:
        await providers.aclose()
    assert (result.status, result.tool_calls, deploys.runs) == ("done", 1, ["billing@v42"])
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    assert [e.text for e in events if e.kind == "tool_result"] == ["deployed billing v42"]
    assert (again.status, deploys.runs) == ("done", ["billing@v42"])
    events = store.tenant(agent.tenant).events(agent.name, wake_id=again.wake_id)
    assert [e.text for e in events if e.kind == "tool_result"] == ["denied by bo: frozen"]
    # Measured as the history bench does (protobuf bytes of the events, payloads compressed
    # as stored) and as the payloads' decoded JSON: the first wake's share holds the
    # workflow's start (the runtime) and its resume; the second wake is what each wake adds.
    accepted = [
        i
        for i, e in enumerate(history.events)
        if e.HasField("workflow_execution_update_accepted_event_attributes")
        and e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        == "wake"
    ]
    assert len(accepted) == 2
    first, second_wake = history.events[: accepted[1]], history.events[accepted[1] :]
    for label, part in (("first wake", first), ("second wake", second_wake)):
        stored = sum(e.ByteSize() for e in part)
        sub = WorkflowHistory(history.workflow_id, list(part))
        decoded = sum(len(p.data) for p in await decoded_payloads(sub))
        print(f"history of the {label}: {stored} bytes stored, {decoded} bytes decoded")
    # The limit is on the wake's event payloads (decoded: larger than as stored).
    decoded = sum(len(p.data) for p in await decoded_payloads(WorkflowHistory("", second_wake)))
    assert decoded <= HISTORY_LIMIT
