"""The wake cycle on the dev server: retries that honour ``retry-after``, a refused model call
that ends the wake (not the agent), a tool that fails for good, queries while a wake runs,
and a stop that ends the wake at its next step."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import Gate, agent_handle, worker
from wakeful.activities.tools import RetryableToolError
from wakeful.agents import Agent, Tool, ToolContext
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.workflows.agent import AgentWorkflow

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _calls(history: Any, kind: str) -> list[Any]:
    """(scheduled, started) event pairs of one activity type."""
    events = list(history.events)
    out = []
    for e in events:
        if e.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        if e.activity_task_scheduled_event_attributes.activity_type.name != kind:
            continue
        started = next(
            s
            for s in events
            if s.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
            and s.activity_task_started_event_attributes.scheduled_event_id == e.event_id
        )
        out.append((e, started))
    return out


async def test_a_429_is_retried_after_the_providers_retry_after(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    script = Script.parse([{"error": {"status": 429, "retry_after": 3}}, {"text": "All good."}])
    async with worker(temporal_dev.client, store, [agent], osim, script=script) as (queue, _):
        result = await wake(temporal_dev.client, agent.runtime(), message("status?"), queue)
        history = await agent_handle(temporal_dev.client, agent).fetch_history()
    assert (result.status, result.model_calls) == ("done", 1)
    ((scheduled, started),) = _calls(history, "wakeful.call_model")
    attrs = started.activity_task_started_event_attributes
    assert attrs.attempt == 2 and "429" in attrs.last_failure.message
    waited = started.event_time.ToDatetime() - scheduled.event_time.ToDatetime()
    assert waited.total_seconds() >= 3  # retry-after, not the policy's 2 s first interval


async def test_a_400_ends_the_wake_without_retrying_and_the_agent_carries_on(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    script = Script.parse([{"error": {"status": 400, "message": "messages: too long"}}])
    async with worker(temporal_dev.client, store, [agent], osim, script=script) as (queue, _):
        bad = await wake(temporal_dev.client, agent.runtime(), message("status?"), queue)
        good = await wake(temporal_dev.client, agent.runtime(), message("hello"), queue)
        history = await agent_handle(temporal_dev.client, agent).fetch_history()
    assert (bad.status, bad.model_calls) == ("model_error", 0)
    assert (good.status, good.model_calls) == ("done", 1)
    (_, started), _ = _calls(history, "wakeful.call_model")
    assert started.activity_task_started_event_attributes.attempt == 1  # never retried
    note = next(
        n for n in store.tenant(agent.tenant).handoffs(agent.name) if n.wake_id == bad.wake_id
    )
    assert any("model call failed" in b and "messages: too long" in b for b in note.body.blockers)


async def test_a_tool_that_fails_for_good_becomes_an_error_result(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    def flaky(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RetryableToolError("upstream 503")

    tool = Tool("flaky_probe", "Probe (flaky).", _NO_ARGS, flaky, timeout_s=10, max_attempts=2)
    agent = dataclasses.replace(agent, tools=(*agent.tools, tool))
    async with worker(temporal_dev.client, store, [agent], osim) as (queue, _):
        result = await wake(temporal_dev.client, agent.runtime(), message("flaky_probe"), queue)
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
    (failed,) = [e for e in events if e.kind == "tool_result"]
    assert failed.is_error and failed.text.startswith("flaky_probe failed for good:")
    assert "upstream 503" in failed.text


async def test_queries_show_the_running_wake_and_stop_ends_it_at_the_next_step(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    gate = Gate()
    agent = dataclasses.replace(agent, tools=(*agent.tools, gate.tool()))
    rt, client = agent.runtime(), temporal_dev.client
    async with worker(client, store, [agent], osim) as (queue, _):
        first = asyncio.create_task(wake(client, rt, message("wait_for_gate now"), queue))
        assert await asyncio.to_thread(gate.started.wait, 60)
        handle = agent_handle(client, agent)
        running = await handle.query(AgentWorkflow.status)
        queued = asyncio.create_task(wake(client, rt, message("and then this"), queue))
        while (await handle.query(AgentWorkflow.status)).pending < 1:
            await asyncio.sleep(0.05)
        await handle.signal(AgentWorkflow.stop)
        gate.opened.set()
        one, two = await first, await queued
        await handle.result()

    assert running.current_wake == "scout:1" and running.session_open
    assert running.budget is not None
    assert (running.budget.model_calls, running.budget.max_model_calls) == (1, 8)
    assert running.cache_clock is not None and running.cache_clock.last_used_at is not None
    assert (one.status, one.model_calls, one.tool_calls) == ("stopped", 1, 1)
    assert two.status == "not_run: the agent was stopped" and two.number == 0
    ts = store.tenant(agent.tenant)
    events = ts.events(agent.name, wake_id=one.wake_id)
    assert [e.kind for e in events] == ["turn", "turn", "tool_call", "tool_result"]
    assert events[-1].text == "the gate opened"
    ends = [n for n in ts.handoffs(agent.name) if n.step_key.endswith(":session-end")]
    assert len(ends) == 1 and "ended (stopped)" in ends[0].body.current_state
