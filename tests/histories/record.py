"""Record the workflow histories that ``tests/orchestration/test_replay.py`` replays.

    python -m tests.histories.record        # writes tests/histories/*_6.json

Starts a Temporal dev server, an embedded Postgres and the provider simulator, runs an agent
through a wake with a tool call, a wake that fans out two child agents, an explicit
``/handoff``, a scheduled wake and a stop, then saves the histories of the agent, one child
and the scheduled-wake workflow.

Then, on the time-skipping server, an agent's life over idle hours
(``agent_lifecycle_workflow``): a wake that expects the next one in 12 minutes (pacing
plans keep-warm calls, which the session alarm fires), the next wake, a repeated trigger
key the workflow has let go of (looked up in the substrate), an idle hour that ends the
session, and the wake after, which continues the run as new. Its model calls run as local
activities.

Re-record after a deliberate workflow change (and say so in the change); a test failing on
the old histories is the point of committing them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.histories.stack import recording_stack
from tests.orchestration.helpers import scout, settled, worker
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver, wake
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.workflows.agent import AgentInput, AgentWorkflow, child_workflow_id, workflow_id
from wakeful.workflows.pacing import PacingPolicy
from wakeful.workflows.scheduled import ScheduledWakeInput, ScheduledWakeWorkflow

HERE = Path(__file__).parent
# Histories of today's workflow code and data converter; earlier recordings keep their names
# (see tests/orchestration/test_replay.py) and must go on replaying.
SUFFIX = "_6"
TENANT = "histories"
FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}
SCRIPT = Script.parse(
    [
        {
            "text": "Two sub-tasks.",
            "tool_calls": [
                {"name": "delegate", "input": {"kind": "facts", "task": f"Key facts of {p}"}}
                for p in ("README.md", "docs/design.md")
            ],
        },
        {"text": json.dumps(FACTS), "times": 2},
        {"text": "Both cards merged. Next: read_file docs/roadmap.md"},
    ]
)


async def record(out: Path) -> None:
    async with recording_stack() as stack:
        root, env, store = stack.root, stack.env, stack.store
        agent = scout(root, tenant=TENANT)
        register_agent(store.tenant(TENANT), agent)
        rt, client = agent.runtime(), env.client
        with SimulatorServer() as sim:
            async with worker(client, store, [agent], sim, script=SCRIPT) as (queue, _):
                await wake(
                    client, rt, message("Survey README.md and the design note.", "w1"), queue
                )
                await wake(client, rt, message("read_file docs/roadmap.md", "w2"), queue)
                await wake(client, rt, message("/handoff end of day", "w3"), queue)
                fire = ScheduledWakeInput(
                    runtime=rt,
                    schedule_id=f"wakeful:{TENANT}:scout:morning",
                    message="list_dir . and say what changed.",
                    task_queue=queue,
                    scheduled_at=datetime(2026, 11, 20, 9, tzinfo=UTC),
                )
                await client.execute_workflow(
                    ScheduledWakeWorkflow.run, fire, id="scheduled-wake", task_queue=queue
                )
                agent_wf = client.get_workflow_handle(workflow_id(TENANT, "scout"))
                while (await agent_wf.query(AgentWorkflow.status)).wakes < 3:
                    await asyncio.sleep(0.1)
                await agent_wf.signal(AgentWorkflow.stop)
                await agent_wf.result()
                for name, wf_id in (
                    ("agent_workflow", workflow_id(TENANT, "scout")),
                    ("child_agent_workflow", child_workflow_id(TENANT, "scout/child/1")),
                    ("scheduled_wake_workflow", "scheduled-wake"),
                ):
                    history = await client.get_workflow_handle(wf_id).fetch_history()
                    (out / f"{name}{SUFFIX}.json").write_text(history.to_json() + "\n")
                    print(f"wrote {name}{SUFFIX}.json ({len(history.events)} events)")
        await record_lifecycle(store, root, out)


async def record_lifecycle(store: Store, root: Path, out: Path) -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(Path(sys.executable).parent / "temporal-test-server"),
        data_converter=data_converter,
    )
    tenant = f"{TENANT}-life"
    agent = dataclasses.replace(scout(root / "life", tenant=tenant), local_model_calls=True)
    (Path(agent.workdir) / "docs" / "incident.md").write_text(
        "\n".join(f"09:{i:02d} checkout p99 {200 + i} ms, retries {i % 7}" for i in range(60))
    )
    register_agent(store.tenant(tenant), agent)
    rt, client = agent.runtime(), env.client
    inp = AgentInput(
        runtime=rt,
        pacing=PacingPolicy(allow_handoff=False),  # keep the session: sleep vs keep-warm
        wakes_per_run=4,
        remembered_results=1,
    )

    async def sleep(sim: SimulatorServer, gap: timedelta) -> None:
        await env.sleep(gap)
        sim.simulator.advance(gap.total_seconds())  # the provider's cache ages too

    try:
        with SimulatorServer() as sim:
            async with worker(client, store, [agent], sim) as (queue, _):
                handle = await client.start_workflow(
                    AgentWorkflow.run, inp, id=workflow_id(tenant, "scout"), task_queue=queue
                )
                now = await env.get_current_time()
                tick = Trigger(
                    goal=Goal(kind=GoalKind.SCHEDULE, text="read_file docs/incident.md"),
                    idempotency_key="tick-1",
                    next_expected_at=now + timedelta(minutes=12),
                )
                # By signal: a repeat by update would be answered by Temporal itself (same
                # update id), never reaching the workflow.
                await deliver(client, rt, tick, queue)
                await settled(client, agent, 1)
                await sleep(sim, timedelta(minutes=12))  # two keep-warm calls
                await wake(client, rt, message("read_file docs/design.md", "tick-2"), queue)
                again = await wake(client, rt, tick, queue)  # let go of: looked up
                assert again.deduplicated, again
                await sleep(sim, timedelta(hours=2))  # the session ends idle
                await wake(client, rt, message("list_dir .", "tick-3"), queue)
                first = client.get_workflow_handle(
                    workflow_id(tenant, "scout"), run_id=handle.result_run_id
                )
                history = await first.fetch_history()  # the first run: continued as new
                name = f"agent_lifecycle_workflow{SUFFIX}.json"
                (out / name).write_text(history.to_json() + "\n")
                print(f"wrote {name} ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(HERE))
