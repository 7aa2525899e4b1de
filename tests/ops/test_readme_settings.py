"""The README's "Knobs and settings" example as a user runs it: its ``policies/ops.toml``
saved in a fresh folder, an agent naming it created with ``wakeful agent create``, and the
section's two commands typed as written. The trigger's knobs act on the deploy's compile
and the ledger names each one; its ``handoff`` action ends the session; and
``wakeful consolidate ops`` summarises history five minutes old, where an agent left at
the defaults (an hour) gets "0 span(s)". Real Temporal dev server, Postgres and the provider
simulator; the worker runs in-process on the CLI's task queue."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.conversation import conversation
from tests.e2e.harness import open_deps
from tests.ops.cli_env import ROOT, shell
from tests.ops.hooks import terminate
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.worker import build_worker

README = ROOT / "README.md"
AGENTS = """\
import os

from wakeful.agents import Agent, AgentRegistry

TENANT = os.environ["WAKEFUL_TENANT"]
registry = AgentRegistry([
    Agent(name="ops", instructions="Keep services healthy.", policy="policies/ops.toml",
          tenant=TENANT),
    Agent(name="plain", instructions="Keep services healthy.", tenant=TENANT),
])
"""
TEXTS = [
    "Morning! The payment queue is backed up again.",
    "I see it: the workers stalled after the 02:00 deploy.",
    "Roll back to v1.4.2 and tell me when the queue drains.",
    "Rolled back to v1.4.2; the queue is draining.",
    "Never deploy the payment workers during month-end close.",
    "Noted: no payment worker deploys during month-end close.",
    "How long until the backlog is gone?",
    "About twenty minutes at the current rate.",
    "Ping me if the error rate rises above 2%.",
    "Will do, watching the error rate.",
    "Thanks.",
    "Anytime.",
]
KNOBS = ("budget_tokens", "tool_output_max_tokens", "freshness", "evict_resolved_errors")


def section() -> tuple[str, list[str]]:
    """The section's policy file and its two commands."""
    text = README.read_text(encoding="utf-8")
    start = text.index("### Knobs and settings")
    end = text.index("\n### ", start + 1)
    part = text[start:end]
    policy = re.findall(r"```toml\n(.*?)```", part, flags=re.S)[0]
    return policy, re.findall(r"^    (wakeful .*)$", part, flags=re.M)


def _ok(done: object) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)  # type: ignore[attr-defined]
    return done.stdout  # type: ignore[attr-defined,no-any-return]


async def test_the_readme_settings_example_runs_as_written(
    env: dict[str, str],
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy, commands = section()
    trigger, consolidate = commands
    assert trigger.startswith("wakeful trigger ops --task-class deploy --message ")
    assert consolidate == "wakeful consolidate ops"
    folder = tmp_path / "project"
    (folder / "policies").mkdir(parents=True)
    (folder / "policies" / "ops.toml").write_text(policy, encoding="utf-8")
    (folder / "ops_agents.py").write_text(AGENTS, encoding="utf-8")
    env = env | {"ANTHROPIC_BASE_URL": sim.base_url}
    _ok(
        await asyncio.to_thread(
            shell, "wakeful agent create --agents ops_agents:registry", env, folder
        )
    )
    tenant = env["WAKEFUL_TENANT"]
    ts = store.tenant(tenant)
    # Twenty minutes old: past the example's five, short of the default hour.
    start = datetime.now(UTC) - timedelta(minutes=20)
    for name in ("ops", "plain"):
        ts.append_events(
            name, conversation(TEXTS, session_id=f"{name}:s0000", start=start, step_key="t")
        )
    monkeypatch.chdir(folder)  # the worker reads policies/ops.toml as the agent names it
    agents = AgentRegistry(
        [
            Agent(name="ops", instructions="Keep services healthy.", policy="policies/ops.toml",
                  tenant=tenant),
            Agent(name="plain", instructions="Keep services healthy.", tenant=tenant),
        ]
    )  # fmt: skip
    try:
        async with (
            open_deps(store, agents, sim, uuid.uuid4().hex) as deps,
            build_worker(temporal_dev.client, deps, env["WAKEFUL_TASK_QUEUE"]),
        ):
            _ok(await asyncio.to_thread(shell, trigger, env, folder))
            explained = _ok(
                await asyncio.to_thread(shell, "wakeful explain ops --wake 1 --json", env, folder)
            )
            summarised = _ok(await asyncio.to_thread(shell, consolidate, env, folder))
            plain = _ok(
                await asyncio.to_thread(shell, "wakeful consolidate plain --json", env, folder)
            )
    finally:
        await terminate(temporal_dev.client, tenant, "ops")
    ledger = json.loads(explained)
    decisions = ledger["decisions"]
    for knob in (*KNOBS, "action"):
        assert f"trigger.deploys.{knob}" in decisions, (knob, decisions)
    assert decisions["trigger.deploys.budget_tokens"].startswith("60000: input budget ")
    assert ledger["input_budget"] == 60_000
    assert decisions["trigger.deploys.action"] == (
        "handoff: the session ends with a handoff note after this wake"
    )
    notes = ts.handoffs("ops")
    assert notes, "the trigger's handoff action wrote no handoff note"
    # The example's consolidation: history five minutes old is summarised...
    said = re.match(r"(\d+) span\(s\): (\d+) summarised", summarised)
    assert said is not None and int(said[1]) >= 1 and int(said[2]) >= 1, summarised
    assert ts.summaries("ops")
    events = [e for e in ts.events("ops") if e.session_id == "ops:s0000"]
    assert any(e.retired_at is not None for e in events)
    # ...and at the defaults (an hour), the same history is not.
    assert json.loads(plain)["spans"] == 0 and not ts.summaries("plain")
