"""Spend caps hold across a fan-out, on the time-skipping server.

A parent with a cap and up to eight parallel children asks, in one reply, for eight
delegations. The children spend on the parent's behalf, so the cap is the parent's: the
fan-out is admitted only within what the parent has left. Across the parent and its
children at most one model call crosses the cap; the delegations there was no budget for
are answered, by name, as not run; and the agent wakes again afterwards (the next wake
for the wake cap, the next UTC day for the day caps).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import FACTS as FACTS_KIND
from tests.orchestration.helpers import Gate, within, worker
from wakeful.agents import Agent
from wakeful.substrate.records import ModelCallRecord, StoredEvent
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import workflow_id
from wakeful.workflows.spend import day_start

WIDTH = 8
FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}
FAN_OUT = {
    "text": "Splitting the work.",
    "tool_calls": [
        {"name": "delegate", "input": {"kind": "facts", "task": f"Key facts of part {n}"}}
        for n in range(1, WIDTH + 1)
    ],
}
STEPS = Script.parse(
    [FAN_OUT, {"text": json.dumps(FACTS), "times": WIDTH}, {"text": "Eight cards merged."}]
)


def _tokens(c: ModelCallRecord) -> float:
    """A call's tokens as ``max_tokens_per_day`` counts them (``spend_since``)."""
    return (
        c.input_tokens + c.output_tokens + c.cache_creation_input_tokens + c.cache_read_input_tokens
    )


def _calls(ts: TenantStore, agent: str) -> list[ModelCallRecord]:
    """Every model call of ``agent``'s first wake and of its children, in the order they
    are sent when the children run one after another: the parent's call that delegates,
    the children's in call order, the parent's after them."""
    first, *later = ts.model_calls(f"{agent}:1")
    names = [f"{agent}/child/{n}" for n in range(1, WIDTH + 1)]
    children = [c for name in names for w in ts.wakes(name) for c in ts.model_calls(w.wake_id)]
    return [first, *children, *later]


def _size(cap_name: str) -> Callable[[ModelCallRecord], float]:
    """What of a call the cap counts: its tokens or its dollars."""
    return _tokens if cap_name == "max_tokens_per_day" else (lambda c: c.cost_usd)


async def _fan_out_under(
    env: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
    cap_name: str,
    cap: float,
) -> list[StoredEvent]:
    """Run the fan-out for a copy of ``agent`` named ``capped`` with the cap ``cap_name``
    at ``cap``; check that at most one model call crossed it and that the agent wakes
    again; return the parent's delegate results."""
    ts = store.tenant(agent.tenant)
    caps: dict[str, Any] = {cap_name: cap}
    capped = dataclasses.replace(agent, name="capped", max_parallel_children=WIDTH, **caps)
    register_agent(ts, capped)
    size = _size(cap_name)
    async with worker(env.client, store, [capped], osim, script=STEPS) as (queue, _):
        result = await wake(env.client, capped.runtime(), message("survey the docs"), queue)
        calls = _calls(ts, "capped")
        spent = [size(c) for c in calls]
        # At most one model call crossed the cap, counting the parent's and the children's:
        # every other one was sent while the spend was under it, and none followed.
        crossed = (cap_name, cap, spent)
        assert sum(spent[:-1]) < cap <= sum(spent), crossed
        assert sum(spent) - cap <= max(spent), crossed
        assert result.status == "budget" and cap_name in (result.error or ""), result
        # Every delegation has its result; those not run say why, naming the cap.
        results = [
            e for e in ts.events("capped", wake_id=result.wake_id) if e.kind == "tool_result"
        ]
        assert len(results) == WIDTH
        refused = [e for e in results if e.text.startswith("not run: spend cap")]
        ran = len(calls) - 1  # each child answers in one call
        assert len(refused) == WIDTH - ran, [e.text for e in results]
        assert all(cap_name in e.text for e in refused), refused[0].text
        # The agent wakes again: the next wake for the wake cap, the next day for a day cap.
        if cap_name != "max_usd_per_wake":
            at = await env.get_current_time()
            await env.sleep(day_start(at) + timedelta(days=1, minutes=1) - at)
        after = await wake(env.client, capped.runtime(), message("hello again"), queue)
    assert after.status == "done" and after.model_calls >= 1, after
    return results


async def _day_begun(env: WorkflowEnvironment) -> None:
    """Skip to a minute into the next UTC day, so a capped day is one day whatever the
    clock said."""
    now = await env.get_current_time()
    await env.sleep(day_start(now) + timedelta(days=1, minutes=1) - now)


@pytest.mark.parametrize("cap_name", ["max_usd_per_wake", "max_usd_per_day", "max_tokens_per_day"])
async def test_a_fan_out_is_narrowed_to_what_the_parent_has_left(
    temporal_skipping: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
    cap_name: str,
) -> None:
    env = temporal_skipping
    ts = store.tenant(agent.tenant)
    await _day_begun(env)
    wide = dataclasses.replace(agent, max_parallel_children=WIDTH)
    register_agent(ts, wide)
    # What the parent's call and each child's cost, measured on the same fan-out uncapped.
    async with worker(env.client, store, [wide], osim, script=STEPS) as (queue, _):
        free = await wake(env.client, wide.runtime(), message("survey the docs"), queue)
    assert (free.status, free.model_calls) == ("done", 2), free
    size = _size(cap_name)
    parent = size(ts.model_calls(free.wake_id)[0])
    per_child = max(
        size(ts.model_calls(f"{agent.name}/child/{n}:1")[0]) for n in range(1, WIDTH + 1)
    )
    # Room, after the parent's call, for one and a half children.
    cap: float = parent + 1.5 * per_child
    if cap_name == "max_tokens_per_day":
        cap = int(cap)

    results = await _fan_out_under(env, store, osim, agent, cap_name, cap)
    # The first child ran within what was left, the second crossed the cap, and the other
    # six were not started.
    assert [e.is_error for e in results] == [False, False] + [True] * (WIDTH - 2)
    assert all(e.text.startswith("not run: spend cap") for e in results[2:])


@pytest.mark.parametrize(
    ("cap_name", "cap"),
    [("max_usd_per_day", 0.001), ("max_usd_per_wake", 0.001), ("max_tokens_per_day", 3000)],
)
async def test_the_caps_of_the_fan_out_attack_hold(
    temporal_skipping: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
    cap_name: str,
    cap: float,
) -> None:
    """The caps the attack ran with: it spent $0.0296, $0.0228 and 10,225 tokens."""
    await _day_begun(temporal_skipping)
    await _fan_out_under(temporal_skipping, store, osim, agent, cap_name, cap)


async def test_after_a_child_that_timed_out_no_delegation_runs_and_the_wake_stops(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """A child that timed out reports no spend, yet may have spent all it was given: the
    delegations after it are not run, and its parent's wake counts that much as spent."""
    # The dev server: a time-skipping server's clock stands still while a tool runs.
    env, gate = temporal_dev, Gate()
    facts = dataclasses.replace(FACTS_KIND, tools=("wait_for_gate",), timeout_s=3)
    capped = dataclasses.replace(
        agent,
        tools=(*agent.tools, gate.tool()),
        delegations=(facts,),
        max_usd_per_wake=1.0,
        max_parallel_children=WIDTH,
    )
    two = {**FAN_OUT, "tool_calls": FAN_OUT["tool_calls"][:2]}
    script = Script.parse(
        [two, {"tool_calls": [{"name": "wait_for_gate", "input": {}}]}, {"text": "Read."}]
    )
    async with worker(env.client, store, [capped], osim, script=script) as (queue, _):
        try:
            result = await within(
                120,
                env.client,
                [workflow_id(agent.tenant, agent.name)],
                wake(env.client, capped.runtime(), message("survey the docs"), queue),
            )
        finally:
            gate.opened.set()  # let the orphaned tool's thread end before the worker does

    ts = store.tenant(agent.tenant)
    timed_out, refused = (
        e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"
    )
    assert timed_out.text == "timed_out: no result within 3s"
    assert refused.text == (
        f"not run: spend cap: child {agent.name}/child/1 ended timed_out without reporting"
        " what it spent of the agent's max_usd_per_wake; the child was not started"
    )
    assert ts.wakes(f"{agent.name}/child/2") == []
    assert (result.status, result.model_calls) == ("budget", 1), result
    assert result.error is not None and "max_usd_per_wake" in result.error
