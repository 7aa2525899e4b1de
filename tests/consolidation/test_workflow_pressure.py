"""``consolidate_on_pressure``: another workflow starts a pressure-gated round as an
abandoned child, which does nothing while the agent's compiles fit their budget."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.consolidation.after_wake import AfterWake
from tests.consolidation.workers import Providers, deps_for
from wakeful.activities.consolidate_memory import consolidation_activities
from wakeful.agents import Agent
from wakeful.consolidation.contracts import ConsolidationInput, ConsolidationResult
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.workflows.consolidation import (
    ConsolidationWorkflow,
    consolidation_workflow_id,
)


async def test_a_workflow_starts_a_pressure_gated_round(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, ops: Agent
) -> None:
    # On the dev server: the Java time-skipping server breaks (its next skip fails with an
    # HTTP/2 error) once a parent has closed over an abandoned child.
    env = temporal_dev
    queue = f"q-{uuid.uuid4().hex[:8]}"
    providers = Providers(sim)
    try:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[AfterWake, ConsolidationWorkflow],
            activities=consolidation_activities(deps_for(store, [ops], providers)),  # type: ignore[arg-type]
            activity_executor=ThreadPoolExecutor(4),
        ):
            inp = ConsolidationInput(runtime=ops.runtime())
            started = await env.client.execute_workflow(
                AfterWake.run, inp, id=f"after-{uuid.uuid4().hex[:8]}", task_queue=queue
            )
            child = env.client.get_workflow_handle(
                consolidation_workflow_id(ops.tenant, ops.name) + ":pressure",
                result_type=ConsolidationResult,
            )
            result = await child.result()
    finally:
        await providers.aclose()
    assert started is True
    assert result.reason == "pressure"
    assert result.skipped == "no budget pressure in the latest compile"
    assert store.tenant(ops.tenant).consolidation_log("ops") == []
