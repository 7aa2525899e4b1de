"""The README's agent example, as it stands: its code block defines a registry whose agent,
woken on the dev server against the provider simulator, calls the example's tool and
finishes the wake; and the README's test of that agent passes as printed."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib
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


def _block_after(text: str, marker: str) -> str:
    return re.findall(r"```python\n(.*?)```", text[text.index(marker) :], flags=re.S)[0]


def _example() -> ModuleType:
    code = _block_after(README.read_text(encoding="utf-8"), "Save this as `triage_agents.py`:")
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


def test_the_readme_agent_test_passes_as_printed(tmp_path: Path) -> None:
    """The README's test of its agent, run as a user would: ``triage_agents.py`` and the
    test saved as printed in a fresh folder, and ``pytest`` run there in a subprocess (no
    configuration of this repository's applies there: no ``asyncio_mode``). The test starts
    its own servers, as printed."""
    text = README.read_text(encoding="utf-8")
    (tmp_path / "triage_agents.py").write_text(
        _block_after(text, "Save this as `triage_agents.py`:"), encoding="utf-8"
    )
    (tmp_path / "test_triage.py").write_text(
        _block_after(text, "**Test your agent**"), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_triage.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout


def test_the_extra_the_readme_names_for_agent_tests_brings_what_they_need() -> None:
    """``pip install 'wakeful[testing]'``, as the README says before its test: the servers,
    the simulator's HTTP server, pytest and pytest-asyncio."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("**Test your agent**") :].split("```python", 1)[0]
    (extra,) = re.findall(r"pip install 'wakeful\[([a-z]+)\]'", section)
    project = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    wants = project["project"]["optional-dependencies"][extra]
    names = {re.split(r"[<>=\[]", w, maxsplit=1)[0] for w in wants}
    assert {"pytest", "pytest-asyncio"} <= names, wants
    assert any(
        w.startswith("wakeful[")
        and {"embedded", "server"} <= set(w[len("wakeful[") : -1].split(","))
        for w in wants
    ), wants
