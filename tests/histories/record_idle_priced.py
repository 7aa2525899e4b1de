"""Record ``agent_idle_priced_workflow.json``: two wakes two hours apart, on the
time-skipping server, by an agent that set no ``handoff_after_idle``.

    python -m tests.histories.record_idle_priced

An hour after the first wake the idle timer fires; the idle limit was not set, so it
takes the ``idle-priced-1`` patch branch (``wakeful.workflows.sessions``): pacing prices
rewriting the one-wake session cold below a handoff, and the session stays open. The
second wake continues it, priced again past the idle window. A stop then ends the session
(its one handoff note) and completes the workflow.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.harness import message
from tests.histories.stack import scout_time_skipping, stop_and_save
from wakeful.worker.client import wake

HERE = Path(__file__).parent
NAME = "agent_idle_priced_workflow"
GAP = timedelta(hours=2)


async def record(out: Path) -> None:
    async with scout_time_skipping() as rec:
        env, agent, sim, queue = rec.env, rec.agent, rec.sim, rec.queue
        rt = agent.runtime()
        await wake(env.client, rt, message("list_dir .", "k0"), queue)
        await env.sleep(GAP)
        sim.simulator.advance(GAP.total_seconds())
        await wake(env.client, rt, message("and now?", "k1"), queue)
        await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
