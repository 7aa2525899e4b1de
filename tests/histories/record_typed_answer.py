"""Record ``agent_typed_answer_workflow.json``: an agent with ``output_type`` that first
replies in text.

    python -m tests.histories.record_typed_answer

The simulator's script answers the first call in plain text and the second through
``final_result``: the workflow takes the ``typed-answer-1`` patch branch
(``wakeful.workflows.cycle.TYPED_ANSWER``), compiles again with a reminder and ends the wake
on the valid answer; the history carries the marker. A stop then completes the workflow.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pydantic import BaseModel

from tests.e2e.harness import message
from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import settled, worker
from wakeful.agents import Agent
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_typed_answer_workflow"
SCRIPT = Script.parse(
    [
        {"text": "It looks like the migration."},
        {"tool_calls": [{"name": "final_result", "input": {"service": "billing", "severe": True}}]},
    ]
)


class Verdict(BaseModel):
    service: str
    severe: bool


async def record(out: Path) -> None:
    async with recording_stack() as stack:
        env, store = stack.env, stack.store
        agent = Agent(
            name="judge",
            instructions="Judge failed deploys.",
            tenant="histories",
            output_type=Verdict,
        )
        register_agent(store.tenant(agent.tenant), agent)
        with SimulatorServer() as sim:
            async with worker(env.client, store, [agent], sim, script=SCRIPT) as (queue, _):
                rt = agent.runtime()
                await deliver(env.client, rt, message("billing deploy failed", "k1"), queue)
                await settled(env.client, agent, 1)
                await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
