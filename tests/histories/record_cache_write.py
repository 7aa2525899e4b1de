"""Record ``agent_cache_write_workflow.json``: wakes of one call each, two hours apart, on
the time-skipping server.

    python -m tests.histories.record_cache_write

Every wake takes the ``cache-ttl-added-1`` patch branch (``wakeful.workflows.agent``:
the 1 h TTL priced on what wakes add). Once the cache clock has seen four such wakes,
nothing read what their first calls wrote in time: the fifth and sixth wakes' first calls
write no session entry (``pacing.first_call_write``), and the history carries the
``first-call-write-1`` marker. A stop then completes the workflow.
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
NAME = "agent_cache_write_workflow"
GAP = timedelta(hours=2)


async def record(out: Path) -> None:
    async with scout_time_skipping() as rec:
        env, agent, sim, queue = rec.env, rec.agent, rec.sim, rec.queue
        for n in range(6):
            if n:
                await env.sleep(GAP)
                sim.simulator.advance(GAP.total_seconds())
            text = f"status note {n}, nothing to look up"
            await wake(env.client, agent.runtime(), message(text, f"k{n}"), queue)
        await stop_and_save(env.client, agent, out / f"{NAME}.json")


if __name__ == "__main__":
    asyncio.run(record(HERE))
