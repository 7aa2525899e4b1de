"""Compile policies as deployable configuration: ``wakeful worker`` reads WAKEFUL_POLICY_DIR
at start, an agent uses a policy by name, and the triggers that the CLI's ``--path`` /
``--intent`` (or the policy's intent rules) make fire change the live window, as its ledger
records. A policy file that does not validate, or an agent naming a policy that is not
there, stops the worker at start with one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compiler.policy_texts import DEPLOYS_TRIGGER, intent_rule
from tests.ops.cli_env import (
    cli_worker,
    run,
    simulated_worker_env,
    worker_command,
)
from tests.ops.policy_setup import agents_file, clerk_worker_refuses, policy_dir, wake_ledger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer

# No name field: the policy is named after its file, triage.
TRIAGE = (
    """
version = 1

[[triggers]]
name = "python"
paths = ["src/*.py"]
rules = ["Run the unit tests before you answer."]
"""
    + DEPLOYS_TRIGGER
    + intent_rule("deploy", "deploy", "roll out")
)


def test_the_worker_serves_a_policy_from_its_directory(
    env: dict[str, str], tmp_path: Path, sim: SimulatorServer, store: Store
) -> None:
    directory = policy_dir(tmp_path, {"triage.toml": TRIAGE})
    env = simulated_worker_env(env, sim) | {"WAKEFUL_POLICY_DIR": str(directory)}
    with cli_worker(worker_command(agents_file(tmp_path)), env, start_within_s=90) as worker:
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
    assert worker.returncode == 0, worker.said

    # Wake 1: the CLI's paths, intent and task class are the goal's; the glob trigger fired
    # and its rule is in the window; the ledger names the policy from the directory.
    body = json.loads(explained.stdout)
    assert (body["policy_name"], body["policy_version"]) == ("triage", 1)
    assert body["decisions"]["triggers.fired"] == "python"
    assert "policy triage v1" in printed.stdout
    assert "decision triggers.fired: python" in printed.stdout
    ledger, goal, window = wake_ledger(store, env["WAKEFUL_TENANT"], 1)
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
    ledger, goal, window = wake_ledger(store, env["WAKEFUL_TENANT"], 2)
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
    directory = policy_dir(tmp_path, {"triage.toml": bad})
    line = clerk_worker_refuses(tmp_path, env, {"WAKEFUL_POLICY_DIR": str(directory)})
    assert str(directory / "triage.toml") in line
    assert "triggers[0].precedence" in line, line


def test_an_agent_naming_an_unknown_policy_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    directory = policy_dir(tmp_path, {"triage.toml": TRIAGE})
    line = clerk_worker_refuses(
        tmp_path, env, {"WAKEFUL_POLICY_DIR": str(directory), "CLERK_POLICY": "triaje"}
    )
    assert "agent 'clerk'" in line
    assert "unknown compile policy 'triaje' (known: default, triage)" in line, line


def test_a_missing_policy_directory_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir"
    line = clerk_worker_refuses(tmp_path, env, {"WAKEFUL_POLICY_DIR": str(missing)})
    assert "WAKEFUL_POLICY_DIR" in line and str(missing) in line
