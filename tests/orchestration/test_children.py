"""Child agents on the time-skipping server: fan-out under a cap, validated evidence cards,
and a child whose answer does not match its schema rejected with the reason."""

from __future__ import annotations

import json
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import (
    FileFacts,
    agent_handle,
    serving_agent,
    the_tool_result,
)
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake

FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}


def delegate(*tasks: str) -> dict[str, Any]:
    return {
        "text": "Splitting the work.",
        "tool_calls": [{"name": "delegate", "input": {"kind": "facts", "task": t}} for t in tasks],
    }


async def test_children_fan_out_under_the_cap_and_merge_as_evidence(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    agent = _with(agent, max_parallel_children=2)
    tasks = (
        "Key facts of README.md",
        "Key facts of docs/design.md",
        "Key facts of docs/roadmap.md",
    )
    script = Script.parse(
        [
            delegate(*tasks),
            {"text": json.dumps(FACTS), "times": 3},  # each child answers once
            {"text": "Three cards merged. Next: compare the dates."},
        ]
    )
    async with serving_agent(env.client, store, agent, osim, script=script) as served:
        result = await served.ask("survey the docs")
        history = await agent_handle(env.client, agent).fetch_history()

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, 3)
    ts = store.tenant(agent.tenant)
    # Never more than two children in flight.
    running = peak = 0
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            running += 1
            peak = max(peak, running)
        elif e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            running -= 1
    assert peak == 2
    # Each valid answer is an evidence card (a memory) and the delegate call's tool result.
    cards = [m for m in ts.memories(agent.name) if m.source.startswith("child:scout/child/")]
    assert len(cards) == 3 and all(m.verification == "schema_valid" for m in cards)
    results = [e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"]
    assert [e.tool_name for e in results] == ["delegate"] * 3
    assert not any(e.is_error for e in results)
    # The children saw their task and their frame, never the parent's conversation.
    for n in (1, 2, 3):
        child = f"scout/child/{n}"
        spec = ts.get_agent(child)["spec"]
        assert [t["name"] for t in spec["tools"]] == ["read_file"]  # the allowlist
        (call,) = ts.model_calls(f"{child}:1")
        window = ts.get_blob(call.window_hash)
        assert "survey the docs" not in window and "Splitting the work" not in window
        assert spec["child"]["task"] in window and "FileFacts" in window  # task and schema
    # The parent's next window carries the cards.
    final = ts.model_calls(result.wake_id)[1]
    assert "2026-12-15" in ts.get_blob(final.window_hash)


async def test_a_child_with_an_invalid_result_is_rejected_with_the_reason(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    script = Script.parse(
        [
            delegate("Key facts of README.md"),
            {"text": "The README is about Lighthouse."},  # attempt 1: prose, not JSON
            {"text": json.dumps({"path": "README.md"})},  # attempt 2: no facts
            {"text": "The child failed; I will read it myself. Next: read_file README.md"},
        ]
    )
    async with serving_agent(env.client, store, agent, osim, script=script) as served:
        result = await served.ask("delegate the README")

    ts = store.tenant(agent.tenant)
    assert result.status == "done"
    card = the_tool_result(ts, agent, result.wake_id)
    assert card.is_error and card.tool_name == "delegate"
    assert card.text.startswith(
        "rejected: invalid result for schema FileFacts: facts: Field required"
    )
    assert not [m for m in ts.memories(agent.name) if m.source.startswith("child:")]
    # The second attempt was told why the first was refused.
    (retry,) = ts.model_calls("scout/child/1:2")
    assert "Your previous answer was rejected: invalid result for schema FileFacts" in ts.get_blob(
        retry.window_hash
    )


async def test_an_oversized_result_is_rejected(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    big = {"path": "README.md", "facts": ["x" * 200] * 5}
    script = Script.parse(
        [
            delegate("Key facts of README.md"),
            {"text": json.dumps(big), "times": 2},
            {"text": "Noted."},
        ]
    )
    async with serving_agent(env.client, store, agent, osim, script=script) as served:
        result = await served.ask("delegate the README")
    ts = store.tenant(agent.tenant)
    card = the_tool_result(ts, agent, result.wake_id)
    assert card.is_error
    size = len(FileFacts.model_validate(big).model_dump_json())
    assert f"rejected: oversized result: {size} characters > the cap of 600" in card.text


async def test_a_refused_delegate_call_is_reported_not_run(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    script = Script.parse(
        [
            {"tool_calls": [{"name": "delegate", "input": {"kind": "poems", "task": "a poem"}}]},
            {"text": "Understood."},
        ]
    )
    async with serving_agent(env.client, store, agent, osim, script=script) as served:
        result = await served.ask("write a poem")
    ts = store.tenant(agent.tenant)
    card = the_tool_result(ts, agent, result.wake_id)
    assert card.is_error
    assert "refused: agent 'scout' has no delegation 'poems' (known: facts)" in card.text


def _with(agent: Agent, **changes: Any) -> Agent:
    import dataclasses

    return dataclasses.replace(agent, **changes)


async def test_a_users_delegation_keeps_its_cards_and_its_childs_history_hers(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """A wake for a user hands the user to its children: their events, the evidence card
    and the delegate result are that user's, and another user's wake sees no card."""
    env = temporal_skipping
    script = Script.parse(
        [
            delegate("Key facts of README.md"),
            {"text": json.dumps(FACTS)},
            {"text": "One card merged."},
        ]
    )
    async with serving_agent(env.client, store, agent, osim, script=script) as served:
        runtime = served.agent.runtime()
        mine = await wake(env.client, runtime, message("survey", user="alice"), served.queue)
        other = await wake(env.client, runtime, message("what is due?", user="bob"), served.queue)
    assert mine.status == other.status == "done" and mine.tool_calls == 1
    ts = store.tenant(agent.tenant)
    (card,) = [m for m in ts.memories(agent.name) if m.source.startswith("child:")]
    assert card.user_id == "alice"
    assert {e.user_id for e in ts.events(agent.name, wake_id=mine.wake_id)} == {"alice"}
    assert {e.user_id for e in ts.events("scout/child/1")} == {"alice"}
    for call in ts.model_calls(other.wake_id):
        assert "2026-12-15" not in ts.get_blob(call.window_hash)
