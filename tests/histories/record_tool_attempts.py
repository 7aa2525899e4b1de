"""Record ``agent_tool_attempts_workflow.json``: tools whose first attempt fails, counted.

    python -m tests.histories.record_tool_attempts

An agent with two tools that each fail their first attempt with a ``RetryableToolError``
and succeed on the second (``max_attempts=2``), one run as an activity and one as a local
activity, is woken once for each; a stop completes the workflow. The run records the
``tool-attempts-1`` patch: a tool's attempts are counted by the workflow (its own failures
come back non-retryable, and it waits on a timer before the next attempt), while the
store's and the worker's failures are retried by Temporal without limit.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from tests.e2e.harness import message
from tests.histories.stack import recording_stack, stop_and_save
from tests.orchestration.helpers import settled, worker
from wakeful.activities.tools import RetryableToolError
from wakeful.agents import Agent, Tool, ToolContext
from wakeful.demo.agent import INSTRUCTIONS, seed_workspace
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import deliver
from wakeful.worker.serve import register_agent

HERE = Path(__file__).parent
NAME = "agent_tool_attempts_workflow"
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def flaky_agent(workdir: Path) -> Agent:
    calls: dict[str, int] = {}

    def once_then_ok(name: str) -> Any:
        def probe(args: dict[str, Any], ctx: ToolContext) -> str:
            calls[name] = calls.get(name, 0) + 1
            if calls[name] == 1:
                raise RetryableToolError("upstream 503")
            return f"{name}: all good"

        return probe

    return Agent(
        name="prober",
        instructions=INSTRUCTIONS,
        tools=(
            Tool("flaky_probe", "Probe (flaky).", NO_ARGS, once_then_ok("flaky_probe"), 10, 2),
            Tool(
                "quick_probe",
                "Probe (quick, flaky).",
                NO_ARGS,
                once_then_ok("quick_probe"),
                timeout_s=5,
                max_attempts=2,
                local=True,
            ),
        ),
        workdir=str(workdir),
        tenant="histories",
    )


async def record(out: Path) -> None:
    async with recording_stack() as stack:
        env, store = stack.env, stack.store
        agent = flaky_agent(seed_workspace(stack.root / "ws"))
        register_agent(store.tenant(agent.tenant), agent)
        with SimulatorServer() as sim:
            async with worker(env.client, store, [agent], sim) as (queue, _):
                rt = agent.runtime()
                await deliver(env.client, rt, message("flaky_probe now", "k1"), queue)
                await settled(env.client, agent, 1)
                await deliver(env.client, rt, message("quick_probe now", "k2"), queue)
                await settled(env.client, agent, 2)
                await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
