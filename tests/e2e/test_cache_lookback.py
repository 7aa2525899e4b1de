"""A cache miss past the provider's lookback window, in a real wake (dev server, Postgres,
the provider simulator, which looks back 20 block boundaries from each breakpoint as
Anthropic documents): one reply calls a tool twelve times in parallel, so the next call's
rolling breakpoint sits 24 content blocks past the entry the first call wrote. Under a
policy that assumes a longer lookback (no bridge breakpoint), the simulator misses it and
``wakeful explain`` and ``wakeful diff`` name the class; under the default policy the
bridge breakpoint reads it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import cli_process_env, message, running_worker
from wakeful import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

CALLS = 12
# Long enough for the first call's prefix to pass the model's 1024-token cache minimum.
HOSTS = " ".join(f"db-{n}.eu-west.internal" for n in range(400))


def wakeful(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


async def _two_calls(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, policy: str
) -> Agent:
    """One wake: a reply with twelve parallel calls, then the answer."""
    agent = Agent(
        name="fanout",
        instructions="Check hosts.",
        policy=policy,
        tenant=f"lookback-{uuid.uuid4().hex[:8]}",
    )

    @agent.tool
    def ping(host: str) -> str:
        """Ping one host."""
        return f"{host}: ok"

    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "ping", "input": {"host": f"db-{n}"}} for n in range(CALLS)]},
        {"text": "All hosts answer."},
    ]
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    registry = AgentRegistry([agent])
    async with running_worker(temporal_dev.client, store, registry, sim, key) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message(f"ping {HOSTS}"), q)
    assert (result.status, result.model_calls, result.tool_calls) == ("done", 2, CALLS), result
    return agent


async def test_explain_and_diff_name_a_miss_past_the_lookback_window(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    far_sighted = tmp_path / "far_sighted.toml"
    far_sighted.write_text("[cache]\nlookback_blocks = 500\n")
    agent = await _two_calls(temporal_dev, store, sim, str(far_sighted))
    env = cli_process_env(pg_url, temporal_dev, tmp_path / "state", agent.tenant)

    explained = wakeful(env, "explain", agent.name, "--wake", "1", "--call", "1", "--json")
    assert explained.returncode == 0, explained.stderr
    outcome = json.loads(explained.stdout)["cache_outcome"]
    assert outcome["cache_class"] == "beyond_lookback", outcome
    assert outcome["through"] == "rolling" and outcome["lookback_distance"] >= 2 * CALLS
    # A real miss: the simulator served less than the entry the first call wrote.
    assert outcome["read_tokens"] < 0.9 * outcome["could_read_tokens"]
    said = wakeful(env, "explain", agent.name, "--wake", "1", "--call", "1")
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[-1].startswith("cache beyond_lookback: 'rolling' ")

    diff = ["diff", agent.name, "--wake", "1", "--call", "1", "--vs", "1", "--vs-call", "0"]
    differs = wakeful(env, *diff, "--json")
    assert differs.returncode == 1, differs.stderr  # the window grew
    assert json.loads(differs.stdout)["cache_outcome"]["cache_class"] == "beyond_lookback"
    panel = wakeful(env, *diff)
    assert panel.returncode == 1, panel.stderr
    shown = " ".join(line.strip("│ ") for line in panel.stdout.splitlines())
    assert "cache beyond_lookback: 'rolling' " in shown, panel.stdout


async def test_the_default_policy_bridges_the_same_loop(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    agent = await _two_calls(temporal_dev, store, sim, "default")
    env = cli_process_env(pg_url, temporal_dev, tmp_path / "state", agent.tenant)
    explained = wakeful(env, "explain", agent.name, "--wake", "1", "--call", "1", "--json")
    assert explained.returncode == 0, explained.stderr
    body = json.loads(explained.stdout)
    assert "bridge" in [bp["name"] for bp in body["breakpoints"]]
    assert body["cache_outcome"]["cache_class"] == "hit", body["cache_outcome"]
