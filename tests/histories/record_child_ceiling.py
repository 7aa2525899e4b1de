"""Record ``agent_child_ceiling_workflow.json``: a capped agent's fan-out.

    python -m tests.histories.record_child_ceiling

An agent with a spend cap (``max_usd_per_wake``) asks, in one reply, for three delegations:
the workflow takes the ``child-ceiling-1`` patch branch (``wakeful.workflows.cycle.
CHILD_CEILING``), so the children run one at a time, each under a ceiling of what the wake
has left of the cap; the history carries the marker. A stop then completes the workflow.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from tests.e2e.harness import message
from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import scout, settled, worker
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_child_ceiling_workflow"
FACTS = {"path": "README.md", "facts": ["release 2.4.0 is due 2026-12-15"]}
STEPS = Script.parse(
    [
        {
            "text": "Splitting the work.",
            "tool_calls": [
                {"name": "delegate", "input": {"kind": "facts", "task": f"Key facts of {p}"}}
                for p in ("README.md", "docs/design.md", "docs/roadmap.md")
            ],
        },
        {"text": json.dumps(FACTS), "times": 3},
        {"text": "Three cards merged."},
    ]
)


async def record(out: Path) -> None:
    async with recording_stack() as stack:
        env, store = stack.env, stack.store
        agent = dataclasses.replace(
            scout(stack.root, tenant="histories", name="spender"), max_usd_per_wake=1.0
        )
        register_agent(store.tenant(agent.tenant), agent)
        with SimulatorServer() as sim:
            async with worker(env.client, store, [agent], sim, script=STEPS) as (queue, _):
                rt = agent.runtime()
                await deliver(env.client, rt, message("survey the docs", "k1"), queue)
                await settled(env.client, agent, 1)
                await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
