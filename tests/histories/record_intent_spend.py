"""Record ``agent_intent_spend_workflow.json``: a wake whose goal a model classified.

    python -m tests.histories.record_intent_spend

A policy names a ``deploy`` intent and a trigger on it; the worker's intent classifier is a
model (``WAKEFUL_INTENT_CLASSIFIER=model``: the agent's own, here the simulator). A message
without intents is classified by that call, whose cost the wake's spend counts: the
workflow takes the ``intent-spend-1`` patch branch (``wakeful.workflows.cycle.INTENT_SPEND``)
and the history carries its marker. A stop then completes the workflow.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from tests.e2e.harness import message
from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import settled, worker
from wakeful.activities.intent_setting import IntentModel
from wakeful.agents import Agent
from wakeful.compiler import load_policy
from wakeful.compiler.intents import ModelChoice
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_intent_spend_workflow"
POLICY = load_policy(
    'name = "releases"\n'
    '[[intents]]\nname = "deploy"\npatterns = ["roll out", "ship"]\n'
    '[[triggers]]\nname = "deploys"\nintents = ["deploy"]\n'
    'rules = ["Check the rollback plan first."]\n'
)


async def record(out: Path) -> None:
    async with recording_stack() as stack:
        env, store = stack.env, stack.store
        agent = Agent(
            name="releaser",
            instructions=INSTRUCTIONS,
            workdir=str(seed_workspace(stack.root / "ws")),
            policy="releases",
            tenant="histories",
        )
        register_agent(store.tenant(agent.tenant), agent)
        classifier = IntentModel(ModelChoice(), asyncio.get_running_loop())
        with SimulatorServer() as sim:
            async with worker(
                env.client,
                store,
                [agent],
                sim,
                policies={"releases": POLICY},
                intent_classifier=classifier,
            ) as (queue, _):
                rt = agent.runtime()
                await deliver(env.client, rt, message("Roll out billing 2.4 today", "k1"), queue)
                await settled(env.client, agent, 1)
                await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
