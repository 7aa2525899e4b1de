"""A configuration error fails a wake's model call on its first attempt, with one line: no
retry can add a missing API key (it was retried eight times, about four minutes)."""

from __future__ import annotations

import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, serving, start_attempts
from wakeful.activities.deps import ActivityDeps, check_agents
from wakeful.agents import Agent, AgentRegistry
from wakeful.contracts import CALL_MODEL
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import wake
from wakeful.worker.serve import ProviderCache
from wakeful.worker.settings import Settings
from wakeful.worker.worker import build_worker
from wakeful.workflows.state import workflow_id


@pytest.fixture
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no base URL from the shell for either provider."""
    for family in ("ANTHROPIC", "OPENAI"):
        for var in ("API_KEY", "BASE_URL"):
            monkeypatch.delenv(f"{family}_{var}", raising=False)
            monkeypatch.delenv(f"WAKEFUL_{family}_{var}", raising=False)


async def test_a_model_call_without_an_api_key_fails_on_its_first_attempt(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, no_provider_env: None
) -> None:
    client = temporal_dev.client
    providers = ProviderCache(Settings(anthropic_api_key=None, anthropic_base_url=None))
    deps = ActivityDeps(
        store=store, agents=AgentRegistry([agent]), providers=providers, counter=BpeCounter()
    )
    queue = f"q-{uuid.uuid4().hex[:8]}"
    try:
        async with serving(build_worker(client, deps, queue)):
            result = await wake(client, agent.runtime(), message("list_dir ."), queue)
            again = await wake(client, agent.runtime(), message("read_file README.md"), queue)
    finally:
        await providers.aclose()

    assert (result.status, result.model_calls) == ("model_error", 0)
    assert (again.status, again.number) == ("model_error", result.number + 1)  # still serving
    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    assert start_attempts(history, CALL_MODEL) == [1, 1]  # one model call per wake, each tried once
    failures = [
        e.activity_task_failed_event_attributes.failure
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert len(failures) == 2
    for failure in failures:
        assert failure.application_failure_info.type == "ConfigError"
        assert failure.application_failure_info.non_retryable
        assert "\n" not in failure.message
        assert "no API key for provider 'anthropic': set ANTHROPIC_API_KEY" in failure.message


async def test_a_base_url_alone_configures_a_provider(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    no_provider_env: None,
) -> None:
    """The simulator (or a local server) wants no key: its base URL is configuration enough,
    for the worker's start-up check and for the wake."""
    client = temporal_dev.client
    providers = ProviderCache(Settings(anthropic_api_key=None, anthropic_base_url=sim.base_url))
    registry = AgentRegistry([agent])
    check_agents(registry, providers, {})
    deps = ActivityDeps(store=store, agents=registry, providers=providers, counter=BpeCounter())
    queue = f"q-{uuid.uuid4().hex[:8]}"
    try:
        async with serving(build_worker(client, deps, queue)):
            result = await wake(client, agent.runtime(), message("list_dir ."), queue)
    finally:
        await providers.aclose()
    assert result.status == "done" and result.model_calls >= 1
