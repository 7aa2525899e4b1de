"""Record ``agent_local_timeout_workflow.json``: a local tool that times out, then a wake.

    python -m tests.histories.record_local_timeout

An agent whose only tool is local and blocks (as the demo's ``read_file`` once did on a
FIFO) is woken by signal: the tool times out, the wake records the failure as a tool result
and finishes; a second trigger wakes the agent normally; a stop completes the workflow. (The
committed history was recorded while a timed-out local tool was still retried, so it holds
two attempts; today a call past its timeout is an error result the model sees, not retried.)

Before the workflow caught a local activity's timeout in the shape a replay gives it
(``wakeful.workflows.cycle.ACTIVITY_FAILURES``), this history failed to replay with
``[TMPRL1100] Nondeterminism error: Missing associated machine for LocalActivity(5)``: the
workflow ran fine on the worker that saw the timeout, and failed on every worker after a
restart.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from tests.e2e.harness import message
from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import settled, worker
from wakeful.agents import Agent, Tool, ToolContext
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_local_timeout_workflow"


def stuck_agent(workdir: Path, release: threading.Event) -> Agent:
    def peek(args: dict[str, Any], ctx: ToolContext) -> str:
        release.wait()  # blocks past its timeout, like an open() on a FIFO with no writer
        return "released"

    tool = Tool(
        name="peek",
        description="Peek at a file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        fn=peek,
        timeout_s=1.0,
        max_attempts=2,
        local=True,
    )
    return Agent(
        name="peeker",
        instructions=INSTRUCTIONS,
        tools=(tool,),
        workdir=str(workdir),
        tenant="histories",
    )


async def record(out: Path) -> None:
    release = threading.Event()
    try:
        async with recording_stack() as stack:
            env, store = stack.env, stack.store
            agent = stuck_agent(seed_workspace(stack.root / "ws"), release)
            register_agent(store.tenant(agent.tenant), agent)
            with SimulatorServer() as sim:
                async with worker(env.client, store, [agent], sim) as (queue, _):
                    rt = agent.runtime()
                    await deliver(env.client, rt, message("peek path=pipe.fifo", "k1"), queue)
                    await settled(env.client, agent, 1)
                    await deliver(env.client, rt, message("What is in README.md?", "k2"), queue)
                    await settled(env.client, agent, 2)
                    await stop_and_save(env.client, agent, out / f"{NAME}.json")
                    release.set()  # the timed-out attempts still hold their threads
    finally:
        release.set()


if __name__ == "__main__":
    asyncio.run(record(HERE))
