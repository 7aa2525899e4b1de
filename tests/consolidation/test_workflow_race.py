"""A consolidation racing a wake (time-skipping server): no event lost, no span summarised
twice — even with two consolidations (a scheduled one and an on-demand one) at once."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tests.consolidation.test_workflow_days import covering
from tests.consolidation.workers import running_worker
from tests.conversation import conversation
from tests.e2e.harness import slow_tool, wait_for_marker
from wakeful.agents import Agent
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import workflow_id as agent_workflow_id
from wakeful.workflows.consolidation import ConsolidationWorkflow, consolidation_workflow_id

POLICY = ConsolidationPolicy(keep_recent_events=2, span_max_events=10, span_min_events=4)


async def test_a_consolidation_racing_a_wake_loses_nothing_and_summarises_once(
    temporal_skipping: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    env = temporal_skipping
    agent = Agent(
        name="ops",
        instructions="Keep services healthy.",
        tools=(slow_tool(tmp_path, heartbeat_s=5, max_attempts=3),),
        tenant=f"race-{uuid.uuid4().hex[:10]}",
    )
    ts = store.tenant(agent.tenant)
    register_agent(ts, agent)
    old = await env.get_current_time() - timedelta(days=2)  # the server's clock, not the wall's
    texts = [
        "Only the release manager may merge to main." if n == 4 else f"Earlier turn {n}."
        for n in range(30)
    ]
    seeded = ts.append_events(
        "ops", conversation(texts, session_id="ops:s0000", start=old, step_key="old:")
    )
    inp = ConsolidationInput(runtime=agent.runtime(), policy=POLICY)
    trigger = Trigger(
        goal=Goal(kind=GoalKind.MESSAGE, text="slow_scan please"), idempotency_key="race-1"
    )
    async with running_worker(env.client, store, [agent], sim) as queue:
        try:
            with env.auto_time_skipping_disabled():
                woken = asyncio.create_task(wake(env.client, agent.runtime(), trigger, queue))
                await wait_for_marker(tmp_path, "started-*")  # the wake is mid-tool now
                running = ts.events("ops", wake_id=ts.wakes("ops")[0].wake_id)
                rounds = await asyncio.gather(
                    env.client.execute_workflow(
                        ConsolidationWorkflow.run,
                        inp.model_copy(update={"reason": "schedule"}),
                        id=f"{consolidation_workflow_id(agent.tenant, 'ops')}-scheduled",
                        task_queue=queue,
                        result_type=ConsolidationResult,
                    ),
                    env.client.execute_workflow(
                        ConsolidationWorkflow.run,
                        inp,
                        id=consolidation_workflow_id(agent.tenant, "ops"),
                        task_queue=queue,
                        result_type=ConsolidationResult,
                    ),
                )
                # The wake is still running: the racing rounds left every one of its events.
                wake_id = ts.wakes("ops")[0].wake_id
                assert all(e.retired_at is None for e in ts.events("ops", wake_id=wake_id))
                assert len(ts.events("ops", wake_id=wake_id)) >= len(running)
                (tmp_path / "release").touch()
                result = await woken
            assert result.tool_calls == 1
            # The agent's workflow would keep its own timers (pacing, keep-warm) running
            # through the skipped day; it has done its part.
            await env.client.get_workflow_handle(agent_workflow_id(agent.tenant, "ops")).terminate()
            # A day later, the finished wake's events are history like any other.
            await env.sleep(timedelta(days=1))
            # Without automatic skipping while it runs: the server would jump to any pending
            # timer (an earlier test's workflow's ten-year run timeout) and expire the rule.
            with env.auto_time_skipping_disabled():
                later = await env.client.execute_workflow(
                    ConsolidationWorkflow.run,
                    inp,
                    id=f"{consolidation_workflow_id(agent.tenant, 'ops')}-later",
                    task_queue=queue,
                    result_type=ConsolidationResult,
                )
        finally:
            with contextlib.suppress(RPCError):  # no agent workflow may hold the clock still
                await env.client.get_workflow_handle(
                    agent_workflow_id(agent.tenant, "ops")
                ).terminate()

    assert all(r.rejected == 0 and r.spans > 0 for r in rounds)
    # Both rounds planned the same spans; each span was committed by exactly one of them.
    assert rounds[0].spans == rounds[1].spans
    first = [e for e in ts.consolidation_log("ops", limit=1000) if e.action == "summary"]
    by_span: dict[str, list[str]] = {}
    for e in first:
        by_span.setdefault(e.subject, []).append(e.status)
    assert by_span and all(sorted(v).count("accepted") == 1 for v in by_span.values()), by_span
    assert later.spans >= 1 and later.raced == 0

    # No summary twice: the events of accepted summaries never overlap.
    summarised = [i for e in first if e.status == "accepted" for i in e.detail["ids"]]
    assert len(summarised) == len(set(summarised))
    # No event lost: the log holds every event, and each retired one has one live summary.
    events = ts.events("ops")
    assert [e.id for e in seeded] == [e.id for e in events][: len(seeded)]
    wake_events = [e for e in events if e.wake_id == wake_id]
    assert len(wake_events) >= 4  # ask, call, result, reply
    stands_for = covering(ts)
    assert set(stands_for) == {e.id for e in events if e.retired_at is not None}
    assert set(summarised) <= set(stands_for)
    assert any(e.retired_at is not None for e in wake_events)  # the later round took them
    assert [d.decision_id for d in ts.live_decisions("ops", await env.get_current_time())] == [
        f"LB-{seeded[4].id}"
    ]
