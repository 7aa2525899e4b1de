"""Wakeful on a team's own Temporal worker: the team's client, connected with
``WakefulPlugin``, and the team's ``Worker`` with its own workflow and activity, serve that
workflow and an agent's wake on one task queue (the plugin reaching the worker through the
client, as the SDK does). Wakeful's payloads are compressed as on ``wakeful worker``."""

from __future__ import annotations

import ast
import asyncio
import base64
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

import wakeful
from tests.e2e.harness import open_deps, serving
from tests.e2e.team_workflows import GreetWorkflow, shout
from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.errors import ConfigError
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store
from wakeful.telemetry import TelemetrySettings, setup_telemetry
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.worker.codec import ENCODING, DeflateCodec, data_converter
from wakeful.worker.plugin import wakeful_converter
from wakeful.workflows.agent import workflow_id

README = Path(__file__).resolve().parents[2] / "README.md"


def _encodings(history_json: str) -> set[str]:
    """The ``encoding`` of every payload in a history (metadata values are base64)."""
    found = re.findall(r'"encoding":\s*"([A-Za-z0-9+/=]+)"', history_json)
    return {base64.b64decode(value).decode() for value in found}


async def test_a_teams_worker_serves_its_own_workflow_and_a_wake(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, sim: SimulatorServer
) -> None:
    target = temporal_dev.client.service_client.config.target_host
    queue = f"team-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps:
        plugin = wakeful.WakefulPlugin(deps)
        # As a team writes it: its own connect and Worker, nothing of Wakeful's but the plugin.
        client = await Client.connect(
            target, namespace=temporal_dev.client.namespace, plugins=[plugin]
        )
        worker = Worker(client, task_queue=queue, workflows=[GreetWorkflow], activities=[shout])
        # A failure timeout only: without Wakeful's workflows on the worker the wake would wait.
        async with asyncio.timeout(120), serving(worker):
            greeted = await client.execute_workflow(
                GreetWorkflow.run, "ada", id=f"greet-{uuid.uuid4().hex[:8]}", task_queue=queue
            )
            result = await wakeful.Client(client, task_queue=queue).wake(
                agent, "What is in README.md?"
            )
    assert greeted == "HELLO, ADA!"
    assert (result.status, bool(result.output)) == ("done", True)

    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    assert ENCODING.decode() in _encodings(history.to_json())
    # The plugin gives a Replayer the same workflows and converter: the wake replays.
    await Replayer(workflows=[GreetWorkflow], plugins=[plugin]).replay_workflow(history)


async def test_the_plugins_tracing_interceptor_records_each_span_once(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, sim: SimulatorServer
) -> None:
    """As ``wakeful worker`` wires it: the tracing interceptor given to the plugin reaches
    the client and the worker, and each activity is traced once (not once per place)."""
    spans = InMemorySpanExporter()
    telemetry = setup_telemetry(TelemetrySettings(), span_exporter=spans)
    target = temporal_dev.client.service_client.config.target_host
    queue = f"team-{uuid.uuid4().hex[:8]}"
    async with open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps:
        deps.telemetry = telemetry
        plugin = wakeful.WakefulPlugin(deps, interceptors=[telemetry.tracing_interceptor()])
        client = await Client.connect(
            target, namespace=temporal_dev.client.namespace, plugins=[plugin]
        )
        async with asyncio.timeout(120), serving(Worker(client, task_queue=queue)):
            result = await wakeful.Client(client, task_queue=queue).wake(agent, "Hello.")
    telemetry.shutdown()
    names = [s.name for s in spans.get_finished_spans()]
    assert result.status == "done" and result.model_calls >= 1
    assert names.count("RunActivity:wakeful.call_model") == result.model_calls
    assert names.count("StartUpdateWithStartWorkflow:AgentWorkflow") == 1  # the client's
    assert names.count("RunWorkflow:AgentWorkflow") == 1  # the worker's


def test_the_plugin_takes_over_a_default_or_pydantic_converter() -> None:
    assert wakeful_converter(None) is data_converter
    for plain in (DataConverter.default, pydantic_data_converter):
        ours = wakeful_converter(plain)
        assert ours.payload_converter_class is data_converter.payload_converter_class
        assert isinstance(ours.payload_codec, DeflateCodec)


def test_the_plugin_refuses_a_converter_with_a_codec_of_its_own() -> None:
    class Encrypting(PayloadCodec):
        """Stands for a team's own codec (encryption, say)."""

        async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
            return list(payloads)

        async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
            return list(payloads)

    theirs = DataConverter(payload_codec=Encrypting())
    with pytest.raises(ConfigError, match="connect without data_converter"):
        wakeful_converter(theirs)


def test_the_readmes_fragment_compiles_and_its_imports_exist() -> None:
    """The README's "Add Wakeful to your own Temporal worker" block is a fragment (the team's
    workflow, activity and registry are theirs), in the shape of the test above: it must
    still compile, and every name it imports must still be there."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Add Wakeful to your own Temporal worker")
    (code,) = re.findall(r"```python\n(.*?)```", text[start : text.index("\n## ", start + 1)], re.S)
    tree = compile(code, "README.md", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert isinstance(tree, ast.Module) and "plugins=[plugin]" in code
    imports = ast.Module([n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)], [])
    exec(compile(imports, "README.md", "exec"), {})


def test_the_plugin_refuses_no_activity_threads(store: Store, agent: Agent) -> None:
    deps = ActivityDeps(
        store=store, agents=AgentRegistry([agent]), providers=build_provider, counter=BpeCounter()
    )
    with pytest.raises(ConfigError, match="max_threads must be at least 1, not 0"):
        wakeful.WakefulPlugin(deps, max_threads=0)
