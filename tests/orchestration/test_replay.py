"""Temporal's Replayer runs the committed histories (``tests/histories/*.json``, recorded by
``python -m tests.histories.record``) against today's workflow code: a change that would
break running agents fails here with a non-determinism error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.state import AgentInput, AgentState

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
NAMES = ("agent_workflow", "child_agent_workflow", "scheduled_wake_workflow")


def _history(name: str) -> WorkflowHistory:
    return WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())


def _event_types(name: str) -> set[str]:
    return {e["eventType"] for e in json.loads((HISTORIES / f"{name}.json").read_text())["events"]}


def test_the_histories_cover_what_matters() -> None:
    agent = _event_types("agent_workflow")
    assert {
        "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED",  # delegate fan-out
        "EVENT_TYPE_MARKER_RECORDED",  # local substrate activities
        "EVENT_TYPE_ACTIVITY_TASK_COMPLETED",  # model calls and tools
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED",  # wake updates
        "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",  # the scheduled trigger and the stop
        "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED",
    } <= agent
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED" in _event_types("child_agent_workflow")
    assert "EVENT_TYPE_ACTIVITY_TASK_COMPLETED" in _event_types("scheduled_wake_workflow")


@pytest.mark.parametrize("name", NAMES)
async def test_committed_histories_replay_without_nondeterminism(name: str) -> None:
    replayer = Replayer(workflows=WORKFLOWS, data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(_history(name))
    assert result.replay_failure is None


@workflow.defn(name="AgentWorkflow", sandboxed=False)
class _ChangedAgentWorkflow:
    """An 'edit' that drops the wake cycle: replay must notice."""

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentState:
        await workflow.wait_condition(lambda: False)
        return inp.state


async def test_the_replayer_catches_a_nondeterministic_change() -> None:
    replayer = Replayer(workflows=[_ChangedAgentWorkflow], data_converter=pydantic_data_converter)
    with pytest.raises(workflow.NondeterminismError):
        await replayer.replay_workflow(_history("agent_workflow"))
