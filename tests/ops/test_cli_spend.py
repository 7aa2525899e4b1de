"""``wakeful agent show`` prints an agent's spend caps and what it spent today (UTC)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.ops.cli_env import make_env, run
from tests.substrate.test_spend import _wake
from wakeful.agents import Agent
from wakeful.cli.agents import spend_line
from wakeful.substrate.store import Store
from wakeful.worker.serve import register_agent


def test_agent_show_prints_the_caps_and_todays_spend(
    pg_url: str, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(pg_url, "127.0.0.1:9", tmp_path, monkeypatch)  # Temporal is not needed
    ts = store.tenant(env["WAKEFUL_TENANT"])
    capped = Agent(name="capped", instructions="x", max_usd_per_day=0.01, max_usd_per_wake=0.5)
    register_agent(ts, capped)
    register_agent(ts, Agent(name="free", instructions="x"))
    # Spent on a day long gone: not today's spend, whatever day the test runs on.
    _wake(ts, "capped", 1, datetime(2001, 1, 1, 12, tzinfo=UTC), [0.25])

    shown = run(["agent", "show", "capped"], env)
    assert shown.exit_code == 0, shown.output
    line = shown.stdout.splitlines()[1]
    assert line.startswith("  spent today (UTC ") and line.endswith(
        "$0.0000 of $0.01, 0 tokens; $0.5 per wake"
    )
    body = json.loads(run(["agent", "show", "capped", "--json"], env).stdout)
    assert body["spend_caps"] == {"max_usd_per_wake": 0.5, "max_usd_per_day": 0.01}
    assert (body["spent_today"]["usd"], body["spent_today"]["tokens"]) == (0.0, 0)
    free = run(["agent", "show", "free"], env).stdout.splitlines()[1]
    assert free.endswith("$0.0000, 0 tokens (no spend caps)")


def test_the_spend_line_names_each_cap() -> None:
    day = datetime(2026, 3, 4, tzinfo=UTC)
    caps: dict[str, float | int] = {"max_usd_per_day": 5, "max_tokens_per_day": 2_000_000}
    assert spend_line(caps, 1.23456, 12_345, day) == (
        "spent today (UTC 2026-03-04): $1.2346 of $5, 12,345 tokens of 2,000,000"
    )
