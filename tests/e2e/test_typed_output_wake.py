"""A typed answer in a real wake (dev server, Postgres, the provider simulator scripting the
model's calls): an agent with ``output_type`` answers through the ``final_result`` tool,
every request tells the provider a tool must be called, an answer that does not validate
comes back to the model naming the field, and the valid one ends the wake: it is the
wake's output, stored as the tool's result and returned validated."""

from __future__ import annotations

import json
import uuid
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful import Agent, AgentRegistry, UserError, WakeResult
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent


class Severity(StrEnum):
    low = "low"
    high = "high"


class Verdict(BaseModel):
    service: str
    severity: Severity
    page_someone: bool


async def _wake(
    env: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent, steps: list[Any]
) -> WakeResult:
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    async with running_worker(env.client, store, AgentRegistry([agent]), sim, key) as queue:
        return await wake(env.client, agent.runtime(), message("billing deploy failed"), queue)


def _answer(**args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "final_result", "input": args}]}


async def test_a_typed_answer_is_validated_retried_and_returned(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = Agent(
        name="judge",
        instructions="Judge failed deploys.",
        tenant=f"typed-out-{uuid.uuid4().hex[:8]}",
        output_type=Verdict,
    )
    steps = [
        _answer(service="billing", severity="catastrophic", page_someone=True),
        _answer(service="billing", severity="high", page_someone=True),
        {"text": "never asked: the valid answer ended the wake"},
    ]
    result = await _wake(temporal_dev, store, sim, agent, steps)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 2)
    assert result.output_as(Verdict) == Verdict(
        service="billing", severity=Severity.high, page_someone=True
    )
    assert json.loads(result.output) == {
        "page_someone": True,
        "service": "billing",
        "severity": "high",
    }
    ts = store.tenant(agent.tenant)
    wrong, right = [
        e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"
    ]
    assert wrong.is_error and "severity: Input should be 'low' or 'high'" in wrong.text
    assert not right.is_error and right.text == result.output  # stored as the tool's result
    for rec in ts.compiles(result.wake_id):
        request = json.loads(ts.get_blob(rec.window_hash))
        assert request["tool_choice"] == {"type": "any"}  # a reply must call a tool
        (tool,) = [t for t in request["tools"] if t["name"] == "final_result"]
        assert tool["input_schema"]["properties"]["severity"]["$ref"].endswith("Severity")


async def test_a_plain_type_is_the_result_parameter(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = Agent(
        name="counter",
        instructions="Count.",
        tenant=f"typed-out-{uuid.uuid4().hex[:8]}",
        output_type=list[int],
    )
    result = await _wake(temporal_dev, store, sim, agent, [_answer(result=[3, 1, 2])])
    assert result.status == "done" and result.output_as(list[int]) == [3, 1, 2]
    with pytest.raises(UserError, match="longer than a result carries"):
        result.model_copy(update={"output_truncated": True}).output_as(list[int])


def test_an_agent_without_output_type_answers_in_text() -> None:
    agent = Agent(name="plain", instructions="Talk.")
    assert "final_result" not in [t.name for t in agent.tools]
    assert agent.runtime().output_tool is None and "tool_choice" not in agent.spec()


def _judge(**fields: Any) -> Agent:
    return Agent(
        name="judge",
        instructions="Judge failed deploys.",
        tenant=f"typed-out-{uuid.uuid4().hex[:8]}",
        output_type=Verdict,
        **fields,
    )


async def test_a_text_reply_is_asked_again_then_the_wake_ends_no_answer(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _judge()
    steps = [{"text": "It looks bad."}, {"text": "Very bad."}, {"text": "Still text."}]
    result = await _wake(temporal_dev, store, sim, agent, steps)

    assert (result.status, result.model_calls, result.output) == ("no_answer", 3, "")
    assert "final_result" in result.error
    with pytest.raises(UserError, match=r"ended no_answer, without an answer"):
        result.output_as(Verdict)
    ts = store.tenant(agent.tenant)
    asked = [
        e.text
        for e in ts.events(agent.name, wake_id=result.wake_id)
        if e.kind == "turn" and e.role == "user" and "final_result" in e.text
    ]
    assert len(asked) == 2  # the model was asked again after each of the first two
    last = json.loads(ts.get_blob(ts.compiles(result.wake_id)[-1].window_hash))
    assert "answer by calling the final_result tool" in json.dumps(last["messages"][-1])
    (row,) = [w for w in ts.wakes(agent.name) if w.wake_id == result.wake_id]
    assert row.status == "no_answer"


async def test_a_text_reply_then_a_valid_answer_is_done(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _judge()
    steps = [{"text": "Let me think."}, _answer(service="api", severity="low", page_someone=False)]
    result = await _wake(temporal_dev, store, sim, agent, steps)
    assert (result.status, result.model_calls) == ("done", 2)
    assert result.output_as(Verdict).service == "api"


@pytest.mark.parametrize(("provider", "model"), [("anthropic", None), ("openai", "gpt-5")])
async def test_an_unscripted_simulator_answers_each_wake_with_a_valid_value(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    provider: str,
    model: str | None,
) -> None:
    """Offline, with no script: the simulator honours tool_choice and answers through
    final_result; the next wake's answer is to its own ask, not the previous answer."""
    agent = _judge(provider=provider, **({"model": model} if model else {}))
    register_agent(store.tenant(agent.tenant), agent)
    registry = AgentRegistry([agent])
    key = uuid.uuid4().hex
    async with running_worker(temporal_dev.client, store, registry, sim, key) as queue:
        first = await wake(
            temporal_dev.client, agent.runtime(), message("billing deploy failed"), queue
        )
        second = await wake(
            temporal_dev.client, agent.runtime(), message("what about search?"), queue
        )
    for result in (first, second):
        assert (result.status, result.model_calls) == ("done", 1), result
        result.output_as(Verdict)
    assert "billing deploy failed" in first.output_as(Verdict).service
    assert "what about search?" in second.output_as(Verdict).service
