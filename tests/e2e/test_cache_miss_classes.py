"""Every cache-miss class, end to end: real wakes (Temporal, embedded Postgres, the provider
simulator through the real SDK), then ``wakeful explain`` and ``wakeful diff`` run on what
was recorded must name the class of the later call, with its reason.

Each case is two wakes of a fresh agent with something real between them: the provider's
clock and the workflow's moved past the TTL (the time-skipping server), the agent
re-registered with a changed tool or a changed policy file (a worker restart, as a deploy
does), a prompt shorter than the model's minimum cacheable prefix, or the provider losing
its cache early (:meth:`Simulator.evict`). ``cold_start`` and ``hit`` are covered by
``tests/ops/test_cli.py``, ``beyond_lookback`` by ``test_cache_lookback.py``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner, Result

from tests.e2e.harness import cli_settings, message, running_worker
from tests.orchestration.helpers import agent_handle
from wakeful import Agent, AgentRegistry
from wakeful.cli.main import app
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

# Instructions long enough for the stable prefix alone to pass the model's 1024-token
# cache minimum, so a miss on it is not below_minimum.
RUNBOOK = " ".join(f"Host db-{n}.eu-west.internal serves shard {n}." for n in range(220))


@pytest.fixture(scope="module")
def msim() -> Iterator[SimulatorServer]:
    """A simulator of this module's own: the TTL case moves its clock."""
    with SimulatorServer() as server:
        yield server


class Session:
    """One agent's wakes on one task queue and one simulator scope (its own caches and
    script cursor), with a worker that serves the agent as defined when it starts: a wake
    on a restarted worker sees the agent re-registered, as after a deploy."""

    def __init__(
        self,
        temporal: WorkflowEnvironment,
        store: Store,
        sim: SimulatorServer,
        pg_url: str,
        tmp: Path,
    ) -> None:
        self.client, self.store, self.sim = temporal.client, store, sim
        self.key = uuid.uuid4().hex
        self.queue = f"q-{uuid.uuid4().hex[:8]}"
        self.tenant = f"miss-{uuid.uuid4().hex[:8]}"
        sim.simulator.set_script(Script(default="echo"), scope=self.key)
        # The settings each command reads this session's wakes with.
        self.cli_env = cli_settings(pg_url, temporal, tmp / "state", self.tenant)

    @asynccontextmanager
    async def serving(self, agent: Agent) -> AsyncIterator[None]:
        """A worker for ``agent`` (registered as a starting worker registers it)."""
        register_agent(self.store.tenant(agent.tenant), agent)
        registry, key, queue = AgentRegistry([agent]), self.key, self.queue
        async with running_worker(self.client, self.store, registry, self.sim, key, queue):
            yield

    async def wake(self, agent: Agent, text: str) -> WakeResult:
        result = await wake(self.client, agent.runtime(), message(text), self.queue)
        assert result.status == "done", result
        return result

    async def restarted(self, agent: Agent, text: str) -> WakeResult:
        """A wake on a worker started for it: ``agent`` as now defined."""
        async with self.serving(agent):
            return await self.wake(agent, text)

    def named(self, agent: Agent, cache_class: str, *reasons: str) -> dict[str, Any]:
        """:func:`named`, on this session's wakes of ``agent``."""
        return named(self.cli_env, agent.name, cache_class, *reasons)


@pytest.fixture
def session(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    msim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> Session:
    """A session in a fresh tenant on the dev server and this module's simulator."""
    return Session(temporal_dev, store, msim, pg_url, tmp_path)


def wakeful(env: dict[str, str], *args: str) -> Result:
    """The CLI in-process (a process per command would cost seconds each)."""
    return CliRunner().invoke(app, list(args), env=env)


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command sees only the settings :attr:`Session.cli_env` gives it."""
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)


def named(env: dict[str, str], agent: str, cache_class: str, *reasons: str) -> dict[str, Any]:
    """Wake 2's first call as ``explain`` (JSON and text) and ``diff`` against wake 1's last
    call (JSON and text) name it: ``cache_class``, with each of ``reasons`` in its detail.
    Returns the outcome ``explain --json`` printed."""
    explained = wakeful(env, "explain", agent, "--wake", "2", "--call", "0", "--json")
    assert explained.exit_code == 0, explained.output
    outcome: dict[str, Any] = json.loads(explained.stdout)["cache_outcome"]
    assert outcome["cache_class"] == cache_class, outcome
    assert all(r in outcome["detail"] for r in reasons), outcome
    said = wakeful(env, "explain", agent, "--wake", "2", "--call", "0")
    assert said.exit_code == 0, said.output
    line = said.stdout.splitlines()[-1]
    assert line.startswith(f"cache {cache_class}: ") and all(r in line for r in reasons), line

    diff = ["diff", agent, "--wake", "2", "--call", "0", "--vs", "1", "--vs-call", "-1"]
    differs = wakeful(env, *diff, "--json")
    assert differs.exit_code == 1, differs.output  # the windows differ (diff(1)'s 1)
    against = json.loads(differs.stdout)["cache_outcome"]
    assert against == outcome  # wake 1's last call is the call before wake 2's first
    panel = wakeful(env, *diff)
    assert panel.exit_code == differs.exit_code, panel.output
    shown = " ".join(line.strip("│ ") for line in panel.stdout.splitlines())
    assert f"cache {cache_class}: " in shown and all(r in shown for r in reasons), panel.stdout
    return outcome


def keeper(tenant: str, *, instructions: str = RUNBOOK, policy: str = "default") -> Agent:
    return Agent(name="keeper", instructions=instructions, policy=policy, tenant=tenant)


def ping(host: str) -> str:
    """Ping one host."""
    return f"{host}: ok"


def ping_n(host: str, count: int = 1) -> str:
    """Ping one host."""
    return f"{host}: ok x{count}"


async def test_a_wake_past_the_ttl_is_ttl_expired(
    temporal_skipping: WorkflowEnvironment,
    store: Store,
    msim: SimulatorServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    """Ten minutes idle: past the 5 minutes the first wake's stable prefix was written for,
    although the second wake marks it for an hour (its TTL follows the idle gaps)."""
    env = temporal_skipping
    s = Session(env, store, msim, pg_url, tmp_path)
    agent = keeper(s.tenant)
    async with s.serving(agent):
        await s.wake(agent, "Which host serves shard 7?")
        # Both clocks move on: the workflow's (each compile's ``now``) and the provider's.
        gap = timedelta(minutes=10)
        await env.sleep(gap)
        msim.simulator.advance(gap.total_seconds())
        await s.wake(agent, "Which host serves shard 9?")
        # A workflow left running with a timer and no worker would hold the shared
        # time-skipping server's clock still for every later test.
        await agent_handle(env.client, agent).terminate("test finished")
    outcome = s.named(agent, "ttl_expired", "TTL of 'stable'")
    assert outcome["through"] == "stable" and outcome["ttl_seconds"] == 300, outcome
    assert outcome["idle_seconds"] >= 600 and outcome["read_tokens"] == 0, outcome
    assert outcome["could_read_tokens"] >= 1024, outcome  # not below the minimum


async def test_a_prompt_below_the_minimum_is_below_minimum(session: Session) -> None:
    agent = keeper(session.tenant, instructions="Answer briefly.")
    async with session.serving(agent):
        await session.wake(agent, "hello")
        await session.wake(agent, "hello again")
    outcome = session.named(
        agent,
        "below_minimum",
        "below the model's minimum of 1024 cacheable tokens",
    )
    assert 0 < outcome["could_read_tokens"] < 1024 and outcome["read_tokens"] == 0, outcome


async def test_a_cache_the_provider_lost_is_provider_eviction(session: Session) -> None:
    agent = keeper(session.tenant)
    async with session.serving(agent):
        await session.wake(agent, "Which host serves shard 7?")
        assert session.sim.simulator.evict(session.key) > 0  # the provider loses its cache early
        await session.wake(agent, "Which host serves shard 9?")
    outcome = session.named(
        agent,
        "provider_eviction",
        "evicted the entry early",
    )
    assert outcome["could_read_tokens"] >= 1024 and outcome["read_tokens"] == 0, outcome
    assert outcome["idle_seconds"] < outcome["ttl_seconds"], outcome


async def test_a_changed_tool_schema_is_a_changed_prefix_naming_the_tool(session: Session) -> None:
    """A deploy changes a tool's parameters: the restarted worker registers the agent anew."""
    before, after = keeper(session.tenant), keeper(session.tenant)
    before.tool(name="ping")(ping)
    after.tool(name="ping")(ping_n)
    await session.restarted(before, "Which host serves shard 7?")
    await session.restarted(after, "Which host serves shard 9?")
    outcome = session.named(
        after,
        "prefix_changed",
        "the tool schema of 'ping' changed",
    )
    assert outcome["cause"] == "tool_schema" and outcome["read_tokens"] == 0, outcome
    assert outcome["difference"]["block_id"] == "tool:ping", outcome


async def test_a_changed_policy_is_a_changed_prefix_naming_the_policy(
    session: Session, tmp_path: Path
) -> None:
    """The agent's policy file gains a trigger that leaves its tool out of shard questions;
    the restarted worker reads the file anew."""
    policy = tmp_path / "ops.toml"
    policy.write_text("version = 1\n")
    agent = keeper(session.tenant, policy=str(policy))
    agent.tool(ping)
    await session.restarted(agent, "Which host serves shard 7?")
    policy.write_text(
        'version = 1\n[[triggers]]\nname = "quiet"\nintents = ["shards"]\n'
        'suppress = ["tool:ping"]\n[[intents]]\nname = "shards"\npatterns = ["shard"]\n'
    )
    changed = keeper(session.tenant, policy=str(policy))
    changed.tool(ping)
    await session.restarted(changed, "Which host serves shard 9?")
    outcome = session.named(
        agent,
        "prefix_changed",
        "the policy changed: ops v1 (fingerprint ",
        "the tool schema of 'ping' was removed",
    )
    assert outcome["cause"] == "policy" and outcome["difference"]["policy_changed"], outcome
