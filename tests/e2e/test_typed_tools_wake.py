"""Typed tools in real wakes (dev server, Postgres, the provider simulator scripting the
model's tool calls): arguments the model gets wrong come back to it as an error result it
corrects; a model that keeps getting them wrong is stopped after ``max_retries``; ``async``
tools run; a ``ToolContext`` parameter receives the call's context."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pydantic import BaseModel
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful import Agent, AgentRegistry, ToolContext, ToolRetry, WakeResult
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent


class Deploy(BaseModel):
    service: str
    step: str
    exit_code: int


def _agent() -> Agent:
    return Agent(
        name="ops",
        instructions="You triage failed deploys.",
        tenant=f"typed-{uuid.uuid4().hex[:8]}",
    )


def _calls(*inputs: dict[str, Any], name: str = "deploys", then: str = "Done.") -> Script:
    steps: list[dict[str, Any]] = [{"tool_calls": [{"name": name, "input": i}]} for i in inputs]
    return Script.parse([*steps, {"text": then}])


async def _wake(
    env: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent, script: Script
) -> tuple[WakeResult, list[StoredEvent]]:
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(script, scope=key)
    async with running_worker(env.client, store, AgentRegistry([agent]), sim, key) as queue:
        result = await wake(env.client, agent.runtime(), message("what failed?"), queue)
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    return result, [e for e in events if e.kind == "tool_result"]


async def test_wrong_arguments_reach_the_model_as_an_error_and_its_corrected_call_runs(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _agent()
    ran: list[tuple[str, int]] = []

    @agent.tool
    def deploys(service: str, last: int = 1) -> list[Deploy]:
        """The last deploys of a service, newest first.

        Args:
            service: The service's name.
            last: How many deploys.
        """
        ran.append((service, last))
        return [Deploy(service=service, step="migrate", exit_code=1)] * last

    script = _calls({"service": "billing", "last": "a few"}, {"service": "billing", "last": 2})
    result, results = await _wake(temporal_dev, store, sim, agent, script)

    assert (result.status, result.tool_calls, result.model_calls) == ("done", 2, 3)
    wrong, right = results
    assert wrong.is_error and wrong.meta.get("retry") == "1"
    assert wrong.text == (
        "invalid arguments for deploys:\n"
        "- last: Input should be a valid integer, unable to parse string as an integer"
        ' (got "a few")\n'
        "Correct this and call deploys again (2 more tries in this wake)."
    )
    assert not right.is_error
    deploy = '{"exit_code":1,"service":"billing","step":"migrate"}'
    assert right.text == f"[{deploy},{deploy}]"
    assert ran == [("billing", 2)], "the tool ran only with valid arguments"


async def test_a_model_that_keeps_getting_arguments_wrong_is_stopped_after_max_retries(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _agent()
    ran: list[str] = []

    @agent.tool(max_retries=1)
    def deploys(service: str) -> str:
        """The last deploy of a service."""
        ran.append(service)
        return service

    bad = {"svc": "billing"}
    script = _calls(bad, bad, bad, {"service": "billing"})
    result, results = await _wake(temporal_dev, store, sim, agent, script)

    assert (result.status, result.tool_calls) == ("done", 4)
    texts = [r.text.splitlines()[-1] for r in results]
    assert texts == [
        "Correct this and call deploys again (1 more tries in this wake).",
        "deploys went wrong 2 times in this wake, more than its max_retries=1: do not call"
        " it again in this wake; go on without it.",
        "deploys not run: the model called it wrongly 2 times in this wake, more than its"
        " max_retries=1; do not call it again in this wake",
        "deploys not run: the model called it wrongly 2 times in this wake, more than its"
        " max_retries=1; do not call it again in this wake",
    ]
    assert all(r.is_error for r in results)
    assert ran == [], "past the bound even a valid call is refused, unrun"


async def test_an_async_tool_with_a_context_runs_and_tool_retry_asks_the_model_again(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _agent()
    contexts: list[ToolContext] = []

    @agent.tool
    async def deploys(ctx: ToolContext, service: str) -> dict[str, Any]:
        """The last deploy of a service."""
        await asyncio.sleep(0)  # a real suspension, on the tool's own loop
        contexts.append(ctx)
        if service != "billing":
            raise ToolRetry(f"no service {service!r}; known: billing")
        return {"service": service, "wake": ctx.wake_id}

    script = _calls({"service": "biling"}, {"service": "billing"})
    result, (wrong, right) = await _wake(temporal_dev, store, sim, agent, script)

    assert (result.status, result.tool_calls) == ("done", 2)
    assert wrong.is_error and wrong.text.splitlines() == [
        "no service 'biling'; known: billing",
        "Correct this and call deploys again (2 more tries in this wake).",
    ]
    assert not right.is_error
    assert right.text == (f'{{"service":"billing","wake":"{result.wake_id}"}}')
    assert [(c.agent, c.tenant, c.wake_id) for c in contexts] == [
        (agent.name, agent.tenant, result.wake_id)
    ] * 2
    assert contexts[0].tool_call_id != contexts[1].tool_call_id
