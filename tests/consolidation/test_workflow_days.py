"""On the time-skipping server: consolidation on days 1 to 7, as the agent's schedule runs it.

The Java time-skipping server does not implement the Schedule API (CreateSchedule is
"unimplemented"), so the test plays the Schedule: once per skipped day it starts the action
of the real schedule definition (:func:`consolidation_schedule`) — the same workflow, input
and task queue a Schedule would start. ``test_schedule_api.py`` runs the real Schedule on the
dev server.

The scenario does not depend on the date: day 1 starts an hour into an epoch-aligned period,
and the clock moves only by the test's own day-long sleeps (the server's automatic skipping is
off while a round runs: it jumps to any pending timer, e.g. the ten-year run timeout of an
earlier workflow, whenever an activity is executing).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import ScheduleActionStartWorkflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.consolidation.workers import running_worker
from tests.conversation import conversation
from wakeful.agents import Agent
from wakeful.consolidation.contracts import ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.schedule import consolidation_schedule
from wakeful.consolidation.spans import EPOCH
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.codec import data_converter
from wakeful.workflows.consolidation import ConsolidationWorkflow

POLICY = ConsolidationPolicy(
    keep_recent_events=4,
    span_min_events=4,
    session_idle=timedelta(hours=6),
    period=timedelta(days=2),
    period_horizon=timedelta(days=1),
)
# Day 1 starts this far into a period, so each 2-day period holds the sessions of two days.
DAY_1_OFFSET = timedelta(hours=1)
DAY_TEXTS = (
    "Morning! Please check the payment queue.",
    "The queue drains steadily and the workers keep up.",
    "FYI, the day {day} release is v1.{day}.0.",
    "Noted, I will watch the rollout.",
    "How do the dashboards look?",
    "Calm, the alerts from the night have cleared.",
    "Thanks, keep an eye on it.",
    "Will do.",
    "Any errors in the gateway?",
    "The gateway error rate stays flat.",
)


async def _day(ts: TenantStore, env: WorkflowEnvironment, day: int) -> None:
    start = await env.get_current_time()
    texts = [t.format(day=day) for t in DAY_TEXTS]
    if day == 1:
        texts[0] = "Never restart the ledger service during month-end close. " + texts[0]
    ts.append_events(
        "ops", conversation(texts, session_id=f"ops:s{day}", start=start, step_key=f"d{day}:")
    )


def covering(ts: TenantStore) -> dict[int, int]:
    """Retired event id -> the live summary standing for it (following rollups up)."""
    live = {s.id for s in ts.summaries("ops")}
    out = {}
    for e in ts.events("ops"):
        if e.retired_at is None:
            continue
        assert e.retired_by is not None and e.retired_by.startswith("summary:")
        node: int | None = int(e.retired_by.removeprefix("summary:"))
        while node is not None and node not in live:
            (summary,) = ts.summaries_by_ids("ops", [node])
            node = summary.superseded_by
        assert node is not None, f"event {e.id} is retired but no live summary stands for it"
        out[e.id] = node
    return out


async def skip_to_next_period(env: WorkflowEnvironment, offset: timedelta) -> None:
    """Skip the server's clock to ``offset`` past the start of the next epoch-aligned period.

    The time-skipping server starts at the real date (and the session's other tests move it
    on); where day 1 falls in its period decides which periods end within the seven days.
    """
    now = await env.get_current_time()
    start = EPOCH + ((now - EPOCH) // POLICY.period + 1) * POLICY.period + offset
    await env.sleep(start - now)
    into = (await env.get_current_time() - EPOCH) % POLICY.period
    assert offset <= into < offset + timedelta(minutes=1), into


async def test_consolidation_on_days_1_to_7(
    temporal_skipping: WorkflowEnvironment, store: Store, sim: SimulatorServer, ops: Agent
) -> None:
    env = temporal_skipping
    await skip_to_next_period(env, DAY_1_OFFSET)
    ts = store.tenant(ops.tenant)
    results: list[ConsolidationResult] = []
    handles = []
    async with running_worker(env.client, store, [ops], sim) as queue:
        schedule = consolidation_schedule(
            ops.runtime(), queue, every=timedelta(days=1), policy=POLICY
        )
        action = schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        assert [i.every for i in schedule.spec.intervals] == [timedelta(days=1)]
        for day in range(1, 8):
            await _day(ts, env, day)
            await env.sleep(timedelta(days=1))
            handle = await env.client.start_workflow(
                action.workflow,
                *action.args,
                id=f"{action.id}-{day}",
                task_queue=action.task_queue,
                result_type=ConsolidationResult,
            )
            handles.append(handle)
            with env.auto_time_skipping_disabled():  # the round runs without moving the clock
                results.append(await handle.result())
    assert all(r.reason == "schedule" and r.rejected == 0 and r.raced == 0 for r in results)
    assert [r.accepted for r in results] == [1] + [2] * 6  # yesterday's tail + today's span
    rollups = [e.subject[:2] for e in ts.consolidation_log("ops", limit=1000, action="rollup")]
    # A session summary a day from day 2 (the day's span and, a day later, its tail), and a
    # period summary every second day, once both sessions of a 2-day period are whole and the
    # period ended a day (the horizon) ago: days 1-2 on day 3, 3-4 on day 5, 5-6 on day 7.
    assert rollups == ["L2", "L2", "L3", "L2", "L2", "L3", "L2", "L2", "L3"]
    assert [r.rollups for r in results] == [0, 1, 2, 1, 2, 1, 2]
    assert sum(r.rollups for r in results) == len(rollups)

    stands_for = covering(ts)
    events = ts.events("ops")
    raw = [e.id for e in events if e.retired_at is None]
    assert raw == [e.id for e in events][-4:]  # only the newest events stay raw
    assert len(stands_for) == len(events) - 4  # every other event has exactly one live summary
    levels = sorted({s.level for s in ts.summaries("ops")})
    assert 3 in levels  # period summaries above the session summaries
    text = "\n".join(s.text for s in ts.summaries("ops"))
    for day in range(1, 7):
        assert f"v1.{day}.0" in text  # every day's release fact survived two rollups
    (rule,) = ts.live_decisions("ops", await env.get_current_time())
    assert rule.text == "Never restart the ledger service during month-end close."

    # The histories replay deterministically.
    replayer = Replayer(workflows=[ConsolidationWorkflow], data_converter=data_converter)
    for handle in handles:
        await replayer.replay_workflow(await handle.fetch_history())
