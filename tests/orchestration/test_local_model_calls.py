"""Agents that run their model calls as local activities (``local_model_calls``), on the dev
server: the wake is the same (every step recorded once, the reply stored), the history holds
markers instead of activity tasks and replays, and the retry policy still holds — a 429
waits the provider's ``retry-after``, a 400 ends the wake at once."""

from __future__ import annotations

import dataclasses
import time

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message, scheduled
from tests.orchestration.helpers import agent_handle, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.worker import WORKFLOWS


async def test_a_wake_runs_its_model_calls_as_local_activities(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, local_model_calls=True)
    assert agent.runtime().local_model_calls
    async with worker(temporal_dev.client, store, [agent], osim) as (queue, _):
        result = await wake(temporal_dev.client, agent.runtime(), message("list_dir ."), queue)
        history = await agent_handle(temporal_dev.client, agent).fetch_history()
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 1)
    assert len(scheduled(history, "wakeful.call_model")) == 0
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert len(markers) >= 5  # two compiles, two model calls, the (local) tool
    ts = store.tenant(agent.tenant)
    assert [c.call_index for c in ts.model_calls(result.wake_id)] == [0, 1]
    assert ts.handoffs(agent.name)[-1].wake_id == result.wake_id
    await Replayer(workflows=WORKFLOWS, data_converter=data_converter).replay_workflow(history)


async def test_a_local_model_call_still_waits_the_providers_retry_after(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, local_model_calls=True)
    script = Script.parse([{"error": {"status": 429, "retry_after": 3}}, {"text": "All good."}])
    async with worker(temporal_dev.client, store, [agent], osim, script=script) as (queue, _):
        began = time.monotonic()
        result = await wake(temporal_dev.client, agent.runtime(), message("status?"), queue)
        took = time.monotonic() - began
    assert (result.status, result.model_calls) == ("done", 1)  # the retry got the reply
    assert took >= 3  # retry-after, not the policy's 2 s first interval


async def test_a_local_model_call_refused_with_a_400_ends_the_wake_at_once(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, local_model_calls=True)
    # A retry of the 400 would get the scripted reply and finish the wake.
    script = Script.parse(
        [{"error": {"status": 400, "message": "messages: too long"}}, {"text": "retried"}]
    )
    async with worker(temporal_dev.client, store, [agent], osim, script=script) as (queue, _):
        bad = await wake(temporal_dev.client, agent.runtime(), message("status?"), queue)
        good = await wake(temporal_dev.client, agent.runtime(), message("hello"), queue)
    assert (bad.status, bad.model_calls) == ("model_error", 0)
    assert (good.status, good.model_calls) == ("done", 1)
