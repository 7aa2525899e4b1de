"""Wakes that end on a budget (time-skipping server): the tool calls spent, or the next window
would overspend the input tokens — held back, not sent. Either way the wake is closed with
that status and its handoff note, and the session ends so the next wake starts afresh."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message
from tests.orchestration.helpers import agent_handle, worker
from wakeful.agents import Agent
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.cycle import TOKEN_PRECHECK

READ = {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]}
# The first window is ~1.6k tokens and the second ~1.7k: one call fits, two do not.
TOKENS = 2_400


def _closed(ts: TenantStore, agent: Agent, result: WakeResult, status: str) -> None:
    """The wake's row, handoff note and the session's end all say how it ended."""
    (row,) = [w for w in ts.wakes(agent.name) if w.wake_id == result.wake_id]
    assert (row.status, row.finished_at is not None) == (status, True)
    (note,) = [n for n in ts.handoffs(agent.name) if n.id == result.handoff_id]
    assert note.wake_id == result.wake_id
    assert note.body.current_state.startswith(
        f"Wake {result.number} ended {status} after {result.model_calls} model call(s)"
        f" and {result.tool_calls} tool call(s)."
    )
    (end,) = [
        n
        for n in ts.handoffs(agent.name)
        if n.session_id == result.session_id and n.step_key.endswith(":session-end")
    ]
    assert f"ended (budget: the wake ended with {status})" in end.body.current_state


def _patches(history: WorkflowHistory) -> set[str]:
    found: set[str] = set()
    for e in history.events:
        marker = e.marker_recorded_event_attributes
        if e.HasField("marker_recorded_event_attributes") and marker.marker_name == "core_patch":
            found.add(json.loads(marker.details["patch-data"].payloads[0].data)["id"])
    return found


async def _run(
    env: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent, steps: Any
) -> tuple[WakeResult, WakeResult, WorkflowHistory]:
    """The budgeted wake, then one more: in a new session, since the budget ended the last.
    The agent's history replays, with the precheck's patch marker only if it held one back."""
    async with worker(env.client, store, [agent], osim, script=Script.parse(steps)) as (q, _):
        spent = await wake(env.client, agent.runtime(), message("read the README"), q)
        after = await wake(env.client, agent.runtime(), message("hello"), q)
        history = await agent_handle(env.client, agent).fetch_history()
    assert after.session_id != spent.session_id
    replayed = await Replayer(workflows=WORKFLOWS, data_converter=data_converter).replay_workflow(
        history
    )
    assert replayed.replay_failure is None
    return spent, after, history


async def test_a_wake_that_spends_its_tool_calls_ends_tool_budget(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, max_tool_calls_per_wake=1)
    result, after, history = await _run(
        temporal_skipping, store, osim, agent, [READ, {"text": "Hi."}]
    )

    assert (result.status, result.model_calls, result.tool_calls) == ("tool_budget", 1, 1)
    assert TOKEN_PRECHECK not in _patches(history)  # nothing held back: no marker
    assert after.status == "done"
    ts = store.tenant(agent.tenant)
    assert len(ts.compiles(result.wake_id)) == 1  # no model call after the budget
    events = ts.events(agent.name, wake_id=result.wake_id)
    assert [e.kind for e in events] == ["turn", "turn", "tool_call", "tool_result"]
    assert not events[-1].is_error  # the call that spent the budget was answered
    _closed(ts, agent, result, "tool_budget")


async def test_a_window_that_would_overspend_the_token_budget_is_not_sent(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, max_tokens_per_wake=TOKENS)
    result, after, history = await _run(
        temporal_skipping, store, osim, agent, [READ, {"text": "Hi."}]
    )

    assert (result.status, result.model_calls, result.tool_calls) == ("token_budget", 1, 1)
    assert TOKEN_PRECHECK in _patches(history)
    ts = store.tenant(agent.tenant)
    # The held-back window took no script step: the next wake got it.
    assert [e.text for e in ts.events(agent.name, wake_id=after.wake_id)][-1] == "Hi."
    first, held = ts.compiles(result.wake_id)
    sent = result.input_tokens + result.cache_read_input_tokens + result.cache_creation_input_tokens
    assert first.input_tokens <= TOKENS < sent + held.input_tokens, "window sizes moved"
    assert sent <= TOKENS
    assert len(ts.model_calls(result.wake_id)) == 1
    _closed(ts, agent, result, "token_budget")


async def test_a_first_window_over_the_whole_token_budget_makes_no_model_call(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    agent = dataclasses.replace(agent, max_tokens_per_wake=500)
    result, _, _ = await _run(temporal_skipping, store, osim, agent, [{"text": "Hello."}])

    assert (result.status, result.model_calls, result.cost_usd) == ("token_budget", 0, 0.0)
    ts = store.tenant(agent.tenant)
    (held,) = ts.compiles(result.wake_id)
    assert held.input_tokens > 500 and not ts.model_calls(result.wake_id)
    # The compile opened the wake (its ask is recorded); finish_wake closed it.
    assert [e.kind for e in ts.events(agent.name, wake_id=result.wake_id)] == ["turn"]
    _closed(ts, agent, result, "token_budget")
