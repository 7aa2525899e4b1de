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
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.substrate.records import ModelCallRecord
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
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


def _tokens(c: ModelCallRecord) -> int:
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


@pytest.mark.parametrize("cap_name", ["max_usd_per_wake", "max_usd_per_day", "max_tokens_per_day"])
async def test_a_fan_out_spends_within_the_parents_cap(
    temporal_skipping: WorkflowEnvironment,
    store: Store,
    osim: SimulatorServer,
    agent: Agent,
    cap_name: str,
) -> None:
    env = temporal_skipping
    ts = store.tenant(agent.tenant)
    # Start a minute into a UTC day, so the capped day is one day whatever the clock.
    now = await env.get_current_time()
    await env.sleep(day_start(now) + timedelta(days=1, minutes=1) - now)
    wide = dataclasses.replace(agent, max_parallel_children=WIDTH)
    register_agent(ts, wide)
    # What the parent's call and each child's cost, measured on the same fan-out uncapped.
    async with worker(env.client, store, [wide], osim, script=STEPS) as (queue, _):
        free = await wake(env.client, wide.runtime(), message("survey the docs"), queue)
    assert (free.status, free.model_calls) == ("done", 2), free
    parent = ts.model_calls(free.wake_id)[0]
    children = [ts.model_calls(f"{agent.name}/child/{n}:1")[0] for n in range(1, WIDTH + 1)]
    size = _tokens if cap_name == "max_tokens_per_day" else (lambda c: c.cost_usd)
    # Room, after the parent's call, for one and a half children: the second crosses it.
    per_child = max(size(c) for c in children)
    cap: Any = size(parent) + 1.5 * per_child
    if cap_name == "max_tokens_per_day":
        cap = int(cap)

    capped = dataclasses.replace(wide, name="capped", **{cap_name: cap})
    register_agent(ts, capped)
    async with worker(env.client, store, [capped], osim, script=STEPS) as (queue, _):
        result = await wake(env.client, capped.runtime(), message("survey the docs"), queue)
        calls = _calls(ts, "capped")
        spent = sum(size(c) for c in calls)
        # At most one model call crossed the cap, counting the parent's and the children's:
        # every other one was sent while the spend was under it.
        crossed = (cap_name, cap, [size(c) for c in calls])
        assert sum(size(c) for c in calls[:-1]) < cap, crossed
        assert spent - cap <= max(size(c) for c in calls), crossed
        assert result.status == "budget" and cap_name in (result.error or ""), result
        # Every delegation has its result; those not run say why.
        results = [
            e for e in ts.events("capped", wake_id=result.wake_id) if e.kind == "tool_result"
        ]
        assert len(results) == WIDTH
        # The fan-out was narrowed: the first child ran within what was left, the second
        # crossed the cap, and the other six were not started.
        run = [e for e in results if not e.is_error]
        refused = [e for e in results if e.text.startswith("not run: spend cap")]
        assert (len(run), len(refused)) == (2, WIDTH - 2), [e.text for e in results]
        assert all(cap_name in e.text for e in refused), refused[0].text
        assert [c.agent for c in calls] == ["capped", "capped/child/1", "capped/child/2"]
        # The agent wakes again: the next wake for the wake cap, the next day for a day cap.
        if cap_name != "max_usd_per_wake":
            at = await env.get_current_time()
            await env.sleep(day_start(at) + timedelta(days=1, minutes=1) - at)
        after = await wake(env.client, capped.runtime(), message("hello again"), queue)
    assert after.status == "done" and after.model_calls >= 1, after
