"""On the time-skipping server: a scheduled wake on days 1, 2 and 3, each resuming from the
handoff note the previous day's session left before it went to sleep.

The Java time-skipping server does not implement the Schedule API (CreateSchedule is
"unimplemented"), so here the test plays the Schedule: it starts ``ScheduledWakeWorkflow`` —
exactly the action a Schedule starts — once per skipped day, passing the scheduled time a
Schedule would put in ``TemporalScheduledStartTime``. ``test_schedules.py`` shows a real
Schedule on the dev server starting the same workflow.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from itertools import pairwise

from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import settled, worker
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.workflows.scheduled import ScheduledWakeInput, ScheduledWakeWorkflow, schedule_key


async def _fire(env: WorkflowEnvironment, agent: Agent, queue: str, day: int) -> datetime:
    at = await env.get_current_time()
    inp = ScheduledWakeInput(
        runtime=agent.runtime(),
        schedule_id="daily-check",
        message=f"Day {day}: read_file README.md and report what changed.",
        task_queue=queue,
        every=timedelta(days=1),
        scheduled_at=at,
    )
    key = await env.client.execute_workflow(
        ScheduledWakeWorkflow.run, inp, id=f"sched-{agent.tenant}-{day}", task_queue=queue
    )
    assert key == schedule_key("daily-check", at)
    return at


async def test_schedule_wakes_on_days_1_2_3_each_from_the_previous_handoff(
    temporal_skipping: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    env = temporal_skipping
    # The agent sets its idle limit: a session ends overnight whatever continuing it would
    # cost (unset, a session this small goes on: test_handoffs prices that).
    agent = dataclasses.replace(agent, handoff_after_idle="1h")
    ts = store.tenant(agent.tenant)
    fired: list[datetime] = []
    async with worker(env.client, store, [agent], osim) as (queue, _):
        for day in (1, 2, 3):
            if day > 1:
                await env.sleep(timedelta(days=1))
                osim.simulator.advance(86_400)  # the provider's cache ages with the agent
            fired.append(await _fire(env, agent, queue, day))
            await settled(env.client, agent, wakes=day)
        # A catch-up re-fire of day 2 (same scheduled time) does not wake the agent again.
        again = ScheduledWakeInput(
            runtime=agent.runtime(),
            schedule_id="daily-check",
            message="Day 2: read_file README.md and report what changed.",
            task_queue=queue,
            scheduled_at=fired[1],
        )
        refire = await env.client.execute_workflow(
            ScheduledWakeWorkflow.run, again, id=f"refire-{agent.tenant}", task_queue=queue
        )
        await settled(env.client, agent, wakes=3)

    wakes = ts.wakes(agent.name)
    assert [w.number for w in wakes] == [1, 2, 3]
    assert [w.idempotency_key for w in wakes] == [schedule_key("daily-check", t) for t in fired]
    assert refire == wakes[1].idempotency_key
    gaps = [b.started_at - a.started_at for a, b in pairwise(wakes)]
    assert all(timedelta(hours=23) < g < timedelta(hours=25) for g in gaps), gaps
    assert len({w.session_id for w in wakes}) == 3  # each day is a new session
    # Each day's session ended before the agent slept: with the next fire a day away, the
    # cache would be cold by then and a fresh session's prefix is cheaper than rewriting
    # the session's, so pacing handed off. The closing note says so.
    ends = [n for n in ts.handoffs(agent.name) if n.step_key.endswith(":session-end")]
    assert [n.session_id for n in ends] == [w.session_id for w in wakes]
    for note in ends:
        assert "ended (pacing: pacing handoff: next wake expected 2" in note.body.current_state
    # Days 2 and 3 compiled from the previous day's closing note, not from its transcript.
    for wake, note in zip(wakes[1:], ends[:2], strict=True):
        first = ts.model_calls(wake.wake_id)[0]
        window = ts.get_blob(first.window_hash)
        assert f"handoff:{note.id}" in window
        assert f"Session {note.session_id} ended (pacing" in window
        earlier = {e.text for e in ts.events(agent.name) if e.session_id == note.session_id}
        messages = json.dumps(json.loads(window)["messages"])
        assert not any(json.dumps(t)[1:-1] in messages for t in earlier if len(t) > 40)
