"""Spend caps on the time-skipping server.

A scheduled agent with a $0.01 daily cap stops calling the model once the day's recorded
spend reaches it: every later fire that day wakes the agent, which ends the wake ``budget``
at once (no model call recorded; the handoff note says why) and keeps serving; after
midnight UTC it spends again. A per-wake cap stops a tool loop before the call that would
follow the cap being reached.

The time-skipping server does not implement Schedules, so the test plays the Schedule as
``test_schedule_days.py`` does: it starts ``ScheduledWakeWorkflow`` once per skipped minute.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.e2e.harness import message, scheduled
from tests.orchestration.helpers import agent_handle, settled, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.scheduled import ScheduledWakeInput, ScheduledWakeWorkflow
from wakeful.workflows.spend import day_start

CAP = 0.01
EVERY = timedelta(minutes=1)
READ = {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]}


async def _fire(env: WorkflowEnvironment, agent: Agent, queue: str, n: int) -> None:
    at = await env.get_current_time()
    inp = ScheduledWakeInput(
        runtime=agent.runtime(),
        schedule_id="every-minute",
        message="Check in: read_file README.md and say what it is about.",
        task_queue=queue,
        every=EVERY,
        scheduled_at=at,
    )
    await env.client.execute_workflow(
        ScheduledWakeWorkflow.run, inp, id=f"fire-{agent.tenant}-{n}", task_queue=queue
    )
    await settled(env.client, agent, wakes=n)


async def test_a_daily_cap_stops_a_schedule_spending_until_midnight_utc(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    agent = dataclasses.replace(agent, max_usd_per_day=CAP)
    ts = store.tenant(agent.tenant)
    # Start a minute into a UTC day, so the whole run sits in one day whatever the clock.
    now = await env.get_current_time()
    await env.sleep(day_start(now) + timedelta(days=1, minutes=1) - now)
    async with worker(env.client, store, [agent], osim) as (queue, _):
        fires = 0
        while fires < 30 and not any(w.status == "budget" for w in ts.wakes(agent.name)):
            if fires:
                await env.sleep(EVERY)
            fires += 1
            await _fire(env, agent, queue, fires)
        spending = fires - 1  # the wakes before the one the cap ended
        for _ in range(2):  # the schedule keeps firing; the agent keeps answering
            await env.sleep(EVERY)
            fires += 1
            await _fire(env, agent, queue, fires)
        day_one = await env.get_current_time()
        await env.sleep(day_start(day_one) + timedelta(days=1, minutes=1) - day_one)
        fires += 1
        await _fire(env, agent, queue, fires)
        history = await agent_handle(env.client, agent).fetch_history()

    wakes = ts.wakes(agent.name)
    assert [w.number for w in wakes] == list(range(1, fires + 1))
    assert 1 <= spending < fires - 3, "the cap was never reached"
    # The wake during which the day's spend reached the cap ended ``budget``, and so did
    # every later fire that day; the first fire after midnight UTC spent again.
    assert [w.status for w in wakes] == ["done"] * spending + ["budget"] * 3 + ["done"]
    day_one_calls = [c.cost_usd for w in wakes[: spending + 1] for c in ts.model_calls(w.wake_id)]
    # Each call started under the cap; the last of them reached it; none followed.
    assert sum(day_one_calls[:-1]) < CAP <= sum(day_one_calls)
    spent = f"${sum(day_one_calls):.4f}"
    for capped in wakes[spending + 1 : -1]:
        assert ts.model_calls(capped.wake_id) == []
        assert capped.finished_at is not None
    for capped in wakes[spending:-1]:
        (note,) = [
            n
            for n in ts.handoffs(agent.name)
            if n.wake_id == capped.wake_id and not n.step_key.endswith(":session-end")
        ]
        assert note.body.current_state.startswith(f"Wake {capped.number} ended budget after")
        day = f"{day_start(capped.started_at):%Y-%m-%d}"
        assert note.body.blockers == [
            f"ended budget: spend cap: the agent spent {spent} today (UTC {day}) of"
            " max_usd_per_day $0.01; the agent spends again after midnight UTC"
        ]
    assert ts.model_calls(wakes[-1].wake_id) != []
    assert day_start(wakes[-1].started_at) == day_start(wakes[0].started_at) + timedelta(days=1)
    # A capped agent's idle time costs nothing either: no keep-warm call after a capped wake.
    keep_warm = scheduled(history, "wakeful.keep_warm")
    assert keep_warm == []
    replayed = await Replayer(workflows=WORKFLOWS, data_converter=data_converter).replay_workflow(
        history
    )
    assert replayed.replay_failure is None


async def test_a_wake_cap_stops_a_tool_loop_before_the_next_call(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    steps = Script.parse([READ, READ, READ, {"text": "Done."}])
    # What the calls of this tool loop cost, measured on the same agent without a cap.
    async with worker(env.client, store, [agent], osim, script=steps) as (queue, _):
        free = await wake(env.client, agent.runtime(), message("read the README"), queue)
    ts = store.tenant(agent.tenant)
    first, second, *_ = (c.cost_usd for c in ts.model_calls(free.wake_id))
    assert free.model_calls == 4

    cap = first + second / 2  # under the cap after call 1, over it after call 2
    capped = dataclasses.replace(agent, name="capped", max_usd_per_wake=cap)
    register_agent(ts, capped)
    async with worker(env.client, store, [capped], osim, script=steps) as (queue, _):
        result = await wake(env.client, capped.runtime(), message("read the README"), queue)
        after = await wake(env.client, capped.runtime(), message("hello again"), queue)

    assert (result.status, result.model_calls, result.tool_calls) == ("budget", 2, 2)
    assert result.error == (
        f"spend cap: this wake spent ${result.cost_usd:.4f} of max_usd_per_wake ${cap:g};"
        " the next model call was not sent"
    )
    assert result.cost_usd >= cap > ts.model_calls(result.wake_id)[0].cost_usd
    assert len(ts.compiles(result.wake_id)) == 2  # the third window was never compiled
    assert [e.kind for e in ts.events("capped", wake_id=result.wake_id)][-1] == "tool_result"
    (note,) = [n for n in ts.handoffs("capped") if n.id == result.handoff_id]
    assert note.body.blockers == [f"ended budget: {result.error}"]
    # The agent stays alive; the next wake has its own wake budget.
    assert after.status == "done" and after.model_calls >= 1


async def test_a_wake_cap_counts_what_its_children_spent(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """A delegation is spent on the wake's behalf: the child's cost counts toward the
    parent's max_usd_per_wake, and toward its day (``TenantStore.spend_since``)."""
    env = temporal_skipping
    facts = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}
    split = {
        "text": "Splitting the work.",
        "tool_calls": [{"name": "delegate", "input": {"kind": "facts", "task": "README.md"}}],
    }
    steps = Script.parse([split, {"text": json.dumps(facts)}, {"text": "Done."}])
    async with worker(env.client, store, [agent], osim, script=steps) as (queue, _):
        free = await wake(env.client, agent.runtime(), message("survey the docs"), queue)
    ts = store.tenant(agent.tenant)
    parent_call = ts.model_calls(free.wake_id)[0].cost_usd
    (child_call,) = ts.model_calls(f"{agent.name}/child/1:1")
    assert free.status == "done" and free.model_calls == 2

    cap = parent_call + child_call.cost_usd / 2  # under it alone; over it with the child
    capped = dataclasses.replace(agent, name="capped", max_usd_per_wake=cap)
    register_agent(ts, capped)
    async with worker(env.client, store, [capped], osim, script=steps) as (queue, _):
        result = await wake(env.client, capped.runtime(), message("survey the docs"), queue)
    assert (result.status, result.model_calls) == ("budget", 1), result
    assert result.error is not None and "max_usd_per_wake" in result.error
    day = ts.spend_since("capped", day_start(ts.wakes("capped")[0].started_at))
    own = sum(c.cost_usd for c in ts.model_calls(result.wake_id))
    (child,) = ts.model_calls("capped/child/1:1")
    assert own < cap and abs(day.usd - (own + child.cost_usd)) < 1e-9
