"""Workflow payloads encoded without asking the workflow for a serialization context: with
Wakeful's data converter (which takes none) the worker's runner is wrapped so that no
activation's payload costs a call into the workflow's instance (in the sandbox, an
``exec``); a converter that does take a context keeps the runner as it is."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.client import Client
from temporalio.converter import (
    PayloadCodec,
    SerializationContext,
    StorageDriverStoreContext,
    WithSerializationContext,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    Worker,
    WorkflowInstance,
    WorkflowInstanceDetails,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.workflow import Info, _Definition

import wakeful
from tests.e2e.harness import open_deps, serving
from tests.e2e.team_workflows import GreetWorkflow, shout
from wakeful.agents import Agent, AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.codec import data_converter
from wakeful.worker.runner import ContextFreeRunner, context_free_runner, takes_context


class _CountingRunner(WorkflowRunner):
    """The SDK's sandboxed runner, counting the context questions its instances answer."""

    def __init__(self) -> None:
        self.inner = SandboxedWorkflowRunner()
        self.asked = 0

    def prepare_workflow(self, defn: _Definition) -> None:
        self.inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _Counting(self.inner.create_instance(det), self)

    def set_worker_level_failure_exception_types(
        self, types: Sequence[type[BaseException]]
    ) -> None:
        self.inner.set_worker_level_failure_exception_types(types)


class _Counting(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance, runner: _CountingRunner) -> None:
        self.inner, self.runner = inner, runner

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        return self.inner.activate(act)

    def get_serialization_context(self, command_info: Any) -> SerializationContext | None:
        self.runner.asked += 1
        return self.inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> StorageDriverStoreContext:
        self.runner.asked += 1
        return self.inner.get_external_store_context(command_info)

    def get_info(self) -> Info:
        return self.inner.get_info()

    def get_thread_id(self) -> int | None:
        return self.inner.get_thread_id()


async def test_a_wake_asks_its_workflow_no_serialization_context(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent, sim: SimulatorServer
) -> None:
    target = temporal_dev.client.service_client.config.target_host
    queue = f"ctx-{uuid.uuid4().hex[:8]}"
    runner = _CountingRunner()
    async with open_deps(store, AgentRegistry([agent]), sim, uuid.uuid4().hex) as deps:
        client = await Client.connect(
            target, namespace=temporal_dev.client.namespace, plugins=[wakeful.WakefulPlugin(deps)]
        )
        worker = Worker(
            client,
            task_queue=queue,
            workflows=[GreetWorkflow],
            activities=[shout],
            workflow_runner=runner,
        )
        async with asyncio.timeout(120), serving(worker):  # a failure timeout only
            greeted = await client.execute_workflow(
                GreetWorkflow.run, "ada", id=f"greet-{uuid.uuid4().hex[:8]}", task_queue=queue
            )
            result = await wakeful.Client(client, task_queue=queue).wake(
                agent, "What is in README.md?"
            )
            again = await wakeful.Client(client, task_queue=queue).wake(agent, "And now?")
    assert greeted == "HELLO, ADA!"
    assert (result.status, again.status) == ("done", "done")
    # Before: every payload of every activation asked (three visits each way).
    assert runner.asked == 0


@dataclasses.dataclass(frozen=True)
class _ContextCodec(PayloadCodec, WithSerializationContext):
    """A codec that takes the context (as one naming each payload's workflow would)."""

    context: SerializationContext | None = None

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    def with_context(self, context: SerializationContext) -> _ContextCodec:
        return _ContextCodec(context)


def test_only_a_converter_that_takes_no_context_gets_the_wrapped_runner() -> None:
    sandboxed, plain = SandboxedWorkflowRunner(), UnsandboxedWorkflowRunner()
    assert not takes_context(data_converter)
    wrapped = context_free_runner(sandboxed, data_converter)
    assert isinstance(wrapped, ContextFreeRunner) and wrapped.inner is sandboxed
    assert context_free_runner(wrapped, data_converter) is wrapped  # not twice
    assert isinstance(context_free_runner(plain, data_converter), ContextFreeRunner)

    contextual = dataclasses.replace(data_converter, payload_codec=_ContextCodec())
    assert takes_context(contextual)
    assert context_free_runner(sandboxed, contextual) is sandboxed
