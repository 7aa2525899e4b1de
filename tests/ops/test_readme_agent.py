"""The README's agent example, as it stands: its code block defines a registry whose agent,
woken on the dev server against the provider simulator, calls the example's tool and
finishes the wake."""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path
from types import ModuleType

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> ModuleType:
    text = README.read_text(encoding="utf-8")
    start = text.index("Save this as `triage_agents.py`:")
    code = re.findall(r"```python\n(.*?)```", text[start:], flags=re.S)[0]
    module = ModuleType("triage_agents")
    exec(compile(code, "README.md", "exec"), module.__dict__)
    return module


async def test_the_readme_agent_runs_its_tool_in_a_wake(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    example = _example()
    (agent,) = list(example.registry)
    assert agent.name == "triage" and [t.name for t in agent.tools] == ["deploy_status"]
    tenant = f"readme-{uuid.uuid4().hex[:8]}"
    agent = dataclasses.replace(agent, tenant=tenant)
    register_agent(store.tenant(tenant), agent)
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, tenant) as queue:
        result = await wake(
            temporal_dev.client,
            agent.runtime(),
            message("deploy_status service=billing failed again"),
            queue,
        )
    assert (result.status, result.tool_calls) == ("done", 1)
    events = store.tenant(tenant).events(agent.name, wake_id=result.wake_id)
    (tool_result,) = [e for e in events if e.kind == "tool_result"]
    assert tool_result.text == '{"failed_step":"migrate","service":"billing","status":"failed"}'


async def test_the_readme_agent_test_passes_as_written(
    temporal_dev: WorkflowEnvironment, pg_url: str, sim: SimulatorServer
) -> None:
    """The README's test of its agent, run against this suite's servers (the README's
    version starts its own: ``tests/e2e/test_agent_test_env.py`` covers that path)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("**Test your agent**")
    code = re.findall(r"```python\n(.*?)```", text[start:], flags=re.S)[0]
    example = _example()
    example.agent = dataclasses.replace(example.agent, tenant=f"readme-{uuid.uuid4().hex[:8]}")
    code = code.replace("from triage_agents import agent\n", "")
    code = code.replace(
        "AgentTestEnv.start(agent)",
        "AgentTestEnv.start(agent, temporal=temporal, database_url=database_url, sim=sim)",
    )
    module = ModuleType("test_triage")
    module.__dict__.update(
        agent=example.agent, temporal=temporal_dev.client, database_url=pg_url, sim=sim
    )
    exec(compile(code, "README.md", "exec"), module.__dict__)
    await module.test_triage_reads_the_deploy_status()
