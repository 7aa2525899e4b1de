"""A schedule's intents, paths and task class are every fire's goal's, so the compile
policy's triggers fire on scheduled wakes too (a real Schedule on the dev server)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.orchestration.helpers import scout, settled, worker
from wakeful.agents import Agent
from wakeful.compiler import Ledger, load_policy
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker import schedules as sch
from wakeful.worker.serve import register_agent

NIGHTLY = """
version = 1
name = "nightly"

[[triggers]]
name = "migrations"
paths = ["db/migrations/*"]
task_classes = ["maintenance"]
rules = ["Never edit an applied migration; add a new one."]
"""


async def test_a_scheduled_wake_carries_its_paths_to_the_policy_triggers(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, tmp_path: Path
) -> None:
    agent = scout(tmp_path, tenant=f"orch-{uuid.uuid4().hex[:10]}", policy="nightly")
    register_agent(store.tenant(agent.tenant), agent)
    client = temporal_dev.client
    policies = {"nightly": load_policy(NIGHTLY)}
    async with worker(client, store, [agent], osim, policies=policies) as (queue, _):
        await sch.create_schedule(
            client,
            agent.runtime(),
            "tidy",
            message="say what is due.",
            task_queue=queue,
            every=timedelta(days=1),
            paused=True,
            paths=["db/migrations/0042_add.sql"],
            intents=["tidy"],
            task_class="maintenance",
        )
        try:
            await sch.trigger_schedule(client, agent.tenant, agent.name, "tidy")
            await settled(client, agent, wakes=1)
        finally:
            await sch.delete_schedule(client, agent.tenant, agent.name, "tidy")
    ts = store.tenant(agent.tenant)
    (only,) = ts.wakes(agent.name)
    assert only.goal["kind"] == "schedule"
    assert (only.goal["paths"], only.goal["intents"], only.goal["task_class"]) == (
        ["db/migrations/0042_add.sql"],
        ["tidy"],
        "maintenance",
    )
    rec = ts.compiles(only.wake_id)[0]
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    assert ledger.policy_name == "nightly"
    assert ledger.decisions["triggers.fired"] == "migrations"
    assert "Never edit an applied migration" in ts.get_blob(rec.window_hash)


async def test_a_schedule_refuses_a_bad_task_class(temporal_dev: WorkflowEnvironment) -> None:
    rt = Agent(name="a", instructions="x").runtime()
    with pytest.raises(UserError, match="task class 'two words' is invalid"):
        await sch.create_schedule(
            temporal_dev.client,
            rt,
            "n",
            message="m",
            task_queue="q",
            every=timedelta(hours=1),
            task_class="two words",
        )
