"""Workflows outside Temporal's sandbox (``WAKEFUL_WORKFLOW_SANDBOX=false``), on the dev
server: the same wake, with a child agent, and a history that the sandboxed code replays
step for step — the sandbox guards, it never changes what a workflow does."""

from __future__ import annotations

import json

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message
from tests.orchestration.helpers import agent_handle, the_tool_result, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.settings import Settings
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.state import child_workflow_id

FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}


async def test_an_unsandboxed_worker_runs_the_wake_the_sandboxed_code_replays(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    script = Script.parse(
        [
            {
                "tool_calls": [
                    {"name": "delegate", "input": {"kind": "facts", "task": "Facts of README.md"}}
                ]
            },
            {"text": json.dumps(FACTS)},  # the child's answer
            {"text": "Merged the child's card."},
        ]
    )
    client = temporal_dev.client
    async with worker(client, store, [agent], osim, script=script, sandboxed=False) as (q, _):
        result = await wake(client, agent.runtime(), message("facts of the README"), q)
        history = await agent_handle(client, agent).fetch_history()
        child = await client.get_workflow_handle(
            child_workflow_id(agent.tenant, "scout/child/1")
        ).fetch_history()

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    ts = store.tenant(agent.tenant)
    card = the_tool_result(ts, agent, result.wake_id)
    assert not card.is_error and "2026-12-15" in card.text
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter)  # sandboxed
    for h in (history, child):
        assert (await replayer.replay_workflow(h)).replay_failure is None


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("false", False), ("1", True)])
def test_the_sandbox_setting_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    if value is None:
        monkeypatch.delenv("WAKEFUL_WORKFLOW_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("WAKEFUL_WORKFLOW_SANDBOX", value)
    assert Settings().workflow_sandbox is expected
