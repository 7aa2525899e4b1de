"""``wakeful schedule add|list|pause|unpause|delete`` against the dev server."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner, Result

from tests.e2e.harness import cli_settings
from tests.orchestration.helpers import scout
from wakeful.cli.command import in_hints
from wakeful.cli.main import app
from wakeful.cli.schedules import parse_duration
from wakeful.errors import UserError
from wakeful.substrate.store import Store
from wakeful.worker.serve import register_agent


@pytest.fixture
def cli_env(
    pg_url: str,
    temporal_dev: WorkflowEnvironment,
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, str]]:
    for name in list(os.environ):
        if name.startswith("WAKEFUL_"):
            monkeypatch.delenv(name)
    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    register_agent(store.tenant(tenant), scout(tmp_path, tenant=tenant))
    settings = cli_settings(pg_url, temporal_dev, tmp_path / "state", tenant)
    yield settings | {"WAKEFUL_TASK_QUEUE": f"q-{uuid.uuid4().hex[:8]}"}


def run(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(app, ["schedule", *args], env=env)


def listed(env: dict[str, str], want: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for _ in range(100):  # visibility is eventually consistent
        result = run(["list", "--json"], env)
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        if len(rows) == want:
            return rows
        time.sleep(0.1)
    raise AssertionError(f"expected {want} schedules, listed {rows}")


def test_add_list_pause_unpause_delete(cli_env: dict[str, str]) -> None:
    added = run(
        ["add", "scout", "morning", "-m", "list_dir .", "--every", "1d", "--paused"], cli_env
    )
    assert added.exit_code == 0, added.output
    assert f"wakeful:{cli_env['WAKEFUL_TENANT']}:scout:morning" in added.stdout
    (row,) = listed(cli_env, 1)
    assert (row["agent"], row["name"], row["paused"]) == ("scout", "morning", True)
    for verb in ("unpause", "pause"):
        assert run([verb, "scout", "morning"], cli_env).exit_code == 0
    assert run(["delete", "scout", "morning"], cli_env).exit_code == 0
    listed(cli_env, 0)


def test_mistakes_get_one_line_errors(cli_env: dict[str, str]) -> None:
    both = run(["add", "scout", "x", "-m", "hi", "--every", "1h", "--cron", "0 9 * * *"], cli_env)
    assert both.exit_code == 2 and "exactly one of every" in both.stderr
    bad = run(["add", "scout", "x", "-m", "hi", "--every", "soon"], cli_env)
    assert bad.exit_code == 2 and "must look like 90s, 15m, 2h, 1d" in bad.stderr
    nobody = run(["add", "ghost", "x", "-m", "hi", "--every", "1h"], cli_env)
    assert nobody.exit_code == 2 and "no agent 'ghost'" in nobody.stderr


def test_durations() -> None:
    assert parse_duration("1h30m").total_seconds() == 5400
    assert parse_duration("90s").total_seconds() == 90
    with pytest.raises(UserError):
        parse_duration("1.5h")


def test_adding_an_existing_schedule_or_acting_on_a_missing_one_is_one_line(
    cli_env: dict[str, str],
) -> None:
    args = ["add", "scout", "nightly", "-m", "list_dir .", "--every", "1d", "--paused"]
    assert run(args, cli_env).exit_code == 0
    try:
        again = run(args, cli_env)
        assert again.exit_code == 2, again.output
        # The hint names the command as it works here (``.venv/bin/wakeful`` off PATH).
        assert again.stderr.strip().splitlines() == [
            in_hints(
                "error: agent 'scout' already has a schedule 'nightly': delete it first"
                " (`wakeful schedule delete scout nightly`) or choose another name"
            )
        ]
    finally:
        assert run(["delete", "scout", "nightly"], cli_env).exit_code == 0
    for verb in ("pause", "unpause", "trigger", "delete"):
        missing = run([verb, "scout", "nightly"], cli_env)
        assert missing.exit_code == 2, (verb, missing.output)
        assert missing.stderr.strip().splitlines() == [
            in_hints("error: agent 'scout' has no schedule 'nightly'; see `wakeful schedule list`")
        ], verb
