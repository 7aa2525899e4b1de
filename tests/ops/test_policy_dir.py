"""Compile policies as deployable configuration: ``wakeful worker`` reads WAKEFUL_POLICY_DIR
at start, an agent uses a policy by name, and the triggers that the CLI's ``--path`` /
``--intent`` (or the policy's intent rules) make fire change the live window, as its ledger
records. A policy file that does not validate, or an agent naming a policy that is not
there, stops the worker at start with one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.ops.cli_env import ROOT, make_env, run
from wakeful.compiler import Ledger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer

TRIAGE = """
# No name field: the policy is named after its file, triage.
version = 1

[[triggers]]
name = "python"
paths = ["src/*.py"]
rules = ["Run the unit tests before you answer."]

[[triggers]]
name = "deploys"
intents = ["deploy"]
rules = ["Check the rollback plan first."]

[[intents]]
name = "deploy"
patterns = ["deploy", "roll out"]
"""

AGENTS = """
import os

from wakeful.agents import Agent, AgentRegistry

registry = AgentRegistry(
    [
        Agent(
            name="clerk",
            instructions="Answer briefly.",
            tenant=os.environ["WAKEFUL_TENANT"],
            policy=os.environ.get("CLERK_POLICY", "triage"),
        )
    ]
)
"""


@pytest.fixture
def env(
    pg_url: str, temporal_dev: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    return make_env(
        pg_url, temporal_dev.client.service_client.config.target_host, tmp_path, monkeypatch
    )


def _agents_file(tmp_path: Path) -> str:
    path = tmp_path / "policy_agents.py"
    path.write_text(AGENTS)
    return f"{path}:registry"


def _policy_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "policies"
    directory.mkdir(exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def _start_worker(agents: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wakeful.cli.main", "worker", "--agents", agents],
        env=os.environ | env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )


def _worker_refuses(agents: str, env: dict[str, str]) -> str:
    """Run ``wakeful worker``; it must exit 2 at start with one ``error:`` line (returned)."""
    done = subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", "worker", "--agents", agents],
        env=os.environ | env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stderr.strip().splitlines() if line]
    errors = [line for line in lines if line.startswith("error: ")]
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    return errors[0]


def _ledger(store: Store, tenant: str, wake_number: int) -> tuple[Ledger, dict[str, object], str]:
    ts = store.tenant(tenant)
    wake = ts.wake_by_number("clerk", wake_number)
    (rec,) = ts.compiles(wake.wake_id)
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    return ledger, rec.goal, ts.get_blob(rec.window_hash)


def test_the_worker_serves_a_policy_from_its_directory(
    env: dict[str, str], tmp_path: Path, sim: SimulatorServer, store: Store
) -> None:
    directory = _policy_dir(tmp_path, {"triage.toml": TRIAGE})
    env = {k: v for k, v in env.items() if k != "WAKEFUL_QDRANT_URL"} | {
        "ANTHROPIC_API_KEY": f"k-{uuid.uuid4().hex[:8]}",
        "ANTHROPIC_BASE_URL": sim.base_url,
        "WAKEFUL_POLICY_DIR": str(directory),
    }
    worker = _start_worker(_agents_file(tmp_path), env)
    try:
        deadline = time.monotonic() + 90  # a failure timeout only: the worker's start
        while run(["health", "--worker"], env).exit_code != 0:
            assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
            assert time.monotonic() < deadline, "the worker never polled its task queue"
            time.sleep(0.5)
        by_path = run(
            [
                *("trigger", "clerk", "-m", "Fix the failing import.", "--json"),
                *("--path", "src/app.py", "--path", "docs/x.md"),
                *("--intent", "bugfix", "--task-class", "code-change"),
            ],
            env,
        )
        assert by_path.exit_code == 0, by_path.output
        by_text = run(["trigger", "clerk", "-m", "Please roll out build 812.", "--json"], env)
        assert by_text.exit_code == 0, by_text.output
        explained = run(["explain", "clerk", "--wake", "1", "--json"], env)
        assert explained.exit_code == 0, explained.output
        printed = run(["explain", "clerk", "--wake", "1"], env)
        assert printed.exit_code == 0, printed.output
    finally:
        worker.send_signal(signal.SIGTERM)
        _, said = worker.communicate(timeout=60)
    assert worker.returncode == 0, said

    # Wake 1: the CLI's paths, intent and task class are the goal's; the glob trigger fired
    # and its rule is in the window; the ledger names the policy from the directory.
    body = json.loads(explained.stdout)
    assert (body["policy_name"], body["policy_version"]) == ("triage", 1)
    assert body["decisions"]["triggers.fired"] == "python"
    assert "policy triage v1" in printed.stdout
    assert "decision triggers.fired: python" in printed.stdout
    ledger, goal, window = _ledger(store, env["WAKEFUL_TENANT"], 1)
    assert (goal["paths"], goal["intents"], goal["task_class"]) == (
        ["src/app.py", "docs/x.md"],
        ["bugfix"],
        "code-change",
    )
    rule = ledger.row("trigger:python:0")
    assert rule is not None and rule.status == "included"
    assert rule.source == "policy:triage:triggers.python"
    assert "Run the unit tests before you answer." in window
    assert "intents.classified" not in ledger.decisions  # the trigger brought an intent
    assert ledger.row("trigger:deploys:0") is None

    # Wake 2: no intents came; the policy's rules classified "roll out" as deploy, and the
    # intent trigger fired instead of the glob one.
    ledger, goal, window = _ledger(store, env["WAKEFUL_TENANT"], 2)
    assert goal["intents"] == ["deploy"]  # the compile record keeps the classified goal
    assert ledger.decisions["intents.classified"] == "deploy (by rules)"
    assert ledger.decisions["triggers.fired"] == "deploys"
    assert ledger.policy_name == "triage"
    assert "Check the rollback plan first." in window
    assert "Run the unit tests before you answer." not in window
    # A recompile from the record (its classified goal, its stored policy) is byte-identical.
    replayed = run(["replay", "clerk", "--wake", "2"], env)
    assert replayed.exit_code == 0 and "recompiled byte-for-byte" in replayed.output, (
        replayed.output
    )


def test_a_bad_policy_file_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    bad = TRIAGE.replace('paths = ["src/*.py"]', 'paths = ["src/*.py"]\nprecedence = "high"')
    directory = _policy_dir(tmp_path, {"triage.toml": bad})
    line = _worker_refuses(
        _agents_file(tmp_path),
        env | {"WAKEFUL_POLICY_DIR": str(directory), "ANTHROPIC_API_KEY": "k-start"},
    )
    assert str(directory / "triage.toml") in line
    assert "triggers[0].precedence" in line, line


def test_an_agent_naming_an_unknown_policy_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    directory = _policy_dir(tmp_path, {"triage.toml": TRIAGE})
    line = _worker_refuses(
        _agents_file(tmp_path),
        env
        | {
            "WAKEFUL_POLICY_DIR": str(directory),
            "ANTHROPIC_API_KEY": "k-start",
            "CLERK_POLICY": "triaje",
        },
    )
    assert "agent 'clerk'" in line
    assert "unknown compile policy 'triaje' (known: default, triage)" in line, line


def test_a_missing_policy_directory_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir"
    line = _worker_refuses(
        _agents_file(tmp_path),
        env | {"WAKEFUL_POLICY_DIR": str(missing), "ANTHROPIC_API_KEY": "k-start"},
    )
    assert "WAKEFUL_POLICY_DIR" in line and str(missing) in line
