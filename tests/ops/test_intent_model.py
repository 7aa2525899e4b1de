"""A model names a goal's intents: ``wakeful worker`` with WAKEFUL_INTENT_CLASSIFIER set to
a model (here the simulator behind the Anthropic provider) classifies a goal that came
without intents, the policy's intent trigger fires, and the ledger says the model did; a
model that cannot be reached falls back to the policy's rules, and the ledger says so. A
bad setting stops the worker at start with one line naming it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.compiler.policy_texts import DEPLOYS_TRIGGER, intent_rule
from tests.ops.cli_env import (
    cli_worker,
    run,
    simulated_worker_env,
    worker_command,
    worker_refuses,
)
from tests.ops.policy_setup import agents_file, policy_dir, wake_ledger
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.codec import data_converter
from wakeful.worker.worker import WORKFLOWS
from wakeful.workflows.cycle import INTENT_SPEND
from wakeful.workflows.state import workflow_id

# The rules know "roll out" only; the simulator's model also knows an intent by its name.
POLICY = "version = 1\n" + DEPLOYS_TRIGGER + intent_rule("deploy", "roll out")


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path, sim: SimulatorServer) -> dict[str, str]:
    """The CLI's settings for a worker answered by the simulator, with POLICY as triage."""
    return simulated_worker_env(env, sim) | {
        "WAKEFUL_POLICY_DIR": str(policy_dir(tmp_path, {"triage.toml": POLICY})),
    }


def _wake_with(env: dict[str, str], tmp_path: Path, message: str) -> dict[str, Any]:
    """Start a worker, run one wake of ``clerk`` with ``message`` and stop the worker;
    returns the wake's result."""
    with cli_worker(worker_command(agents_file(tmp_path)), env, start_within_s=90) as worker:
        done = run(["trigger", "clerk", "-m", message, "--json"], env)
        assert done.exit_code == 0, done.output
    assert worker.returncode == 0, worker.said
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def test_the_model_names_the_intent_and_its_trigger_fires(
    env: dict[str, str], tmp_path: Path, store: Store, temporal_dev: WorkflowEnvironment
) -> None:
    env |= {"WAKEFUL_INTENT_CLASSIFIER": "model:anthropic:claude-haiku-4-5"}
    message = "Deploy build 812 to production."  # no rule pattern in it
    result = await asyncio.to_thread(_wake_with, env, tmp_path, message)

    ledger, goal, window = wake_ledger(store, env["WAKEFUL_TENANT"], 1)
    assert goal["intents"] == ["deploy"]  # the compile record keeps the classified goal
    assert ledger.decisions["intents.classified"] == "deploy (by model:anthropic:claude-haiku-4-5)"
    assert ledger.decisions["triggers.fired"] == "deploys"
    rule = ledger.row("trigger:deploys:0")
    assert rule is not None and rule.status == "included"
    assert "Check the rollback plan first." in window
    # The choice and its cost are logged with the compile's step key; a recompile reads the
    # classified goal from the record and asks no model.
    ts = store.tenant(env["WAKEFUL_TENANT"])
    (entry,) = ts.consolidation_log("clerk", action="intent_classification")
    assert entry.status == "model" and entry.detail["cost_usd"] > 0
    # The wake's spend counts it, besides its own model call.
    calls = ts.model_calls(ts.wake_by_number("clerk", 1).wake_id)
    spent = sum(c.cost_usd for c in calls) + entry.detail["cost_usd"]
    assert result["cost_usd"] == pytest.approx(spent)
    replayed = run(["replay", "clerk", "--wake", "1"], env)
    assert replayed.exit_code == 0 and "recompiled byte-for-byte" in replayed.output, (
        replayed.output
    )
    # The workflow took the INTENT_SPEND branch, and its history replays deterministically.
    handle = temporal_dev.client.get_workflow_handle(workflow_id(env["WAKEFUL_TENANT"], "clerk"))
    history = await handle.fetch_history()
    patches = [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    assert any(INTENT_SPEND.encode() in p for p in patches)
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter)
    assert (await replayer.replay_workflow(history)).replay_failure is None


def test_a_model_that_fails_falls_back_to_the_rules(
    env: dict[str, str], tmp_path: Path, store: Store
) -> None:
    # Nothing listens on port 9: the classifier's call fails to connect.
    env |= {
        "WAKEFUL_INTENT_CLASSIFIER": "model:openai:gpt-4o-mini",
        "OPENAI_BASE_URL": "http://127.0.0.1:9",
    }
    _wake_with(env, tmp_path, "Please roll out build 812.")

    ledger, goal, window = wake_ledger(store, env["WAKEFUL_TENANT"], 1)
    assert goal["intents"] == ["deploy"]
    said = ledger.decisions["intents.classified"]
    assert said.startswith("deploy (by rules (model failed: "), said
    assert ledger.decisions["triggers.fired"] == "deploys"
    assert "Check the rollback plan first." in window


def test_a_bad_classifier_setting_stops_the_worker_with_one_line(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    line = worker_refuses(agents_file(tmp_path), env | {"WAKEFUL_INTENT_CLASSIFIER": "llm"})
    assert "WAKEFUL_INTENT_CLASSIFIER" in line and "model:<provider>:<model>" in line, line
    line = worker_refuses(
        agents_file(tmp_path),
        env | {"WAKEFUL_INTENT_CLASSIFIER": "model:openai:gpt-4o-mini"},  # no key, no URL
    )
    assert "WAKEFUL_INTENT_CLASSIFIER=model:openai_chat:gpt-4o-mini" in line, line
    assert "OPENAI_API_KEY" in line, line
