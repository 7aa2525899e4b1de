"""Record ``agent_trigger_handoff_workflow.json``: a wake whose goal fires a trigger with
``action = "handoff"``.

    python -m tests.histories.record_trigger_handoff

The agent's policy file has a trigger on the task class ``deploy`` whose action is
``handoff``: the compile says so (``CompileOut.handoff``), and after the wake the workflow
takes the ``trigger-handoff-1`` patch branch (``wakeful.workflows.agent``) and ends the
session with a handoff note; the history carries the marker. A stop then completes the
workflow.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import settled, worker
from wakeful.agents import Agent
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import Trigger
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_trigger_handoff_workflow"
POLICY = """\
name = "deploys"

[[triggers]]
name = "deploys"
task_classes = ["deploy"]
action = "handoff"
"""


async def record(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        policy = Path(folder) / "deploys.toml"
        policy.write_text(POLICY)
        async with recording_stack() as stack:
            env, store = stack.env, stack.store
            agent = Agent(
                name="shipper",
                instructions="Ship releases.",
                tenant="histories",
                policy=str(policy),
                handoff_notes="template",
            )
            register_agent(store.tenant(agent.tenant), agent)
            with SimulatorServer() as sim:
                async with worker(env.client, store, [agent], sim) as (queue, _):
                    goal = Goal(kind=GoalKind.MESSAGE, text="Roll out v42", task_class="deploy")
                    trigger = Trigger(goal=goal, idempotency_key="k1")
                    await deliver(env.client, agent.runtime(), trigger, queue)
                    await settled(env.client, agent, 1)
                    await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
