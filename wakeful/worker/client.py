"""Starting and waking agents from outside a workflow (CLI, ingress, schedules)."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.client import Client, Interceptor, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.pydantic import pydantic_data_converter

from wakeful.agents import AgentRuntime
from wakeful.contracts import Trigger, WakeResult
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id


async def connect(
    address: str, namespace: str, *, interceptors: Sequence[Interceptor] = ()
) -> Client:
    """A client with Wakeful's data converter. ``interceptors`` that are also worker
    interceptors (Temporal's ``TracingInterceptor``) apply to workers built on it too."""
    return await Client.connect(
        address,
        namespace=namespace,
        data_converter=pydantic_data_converter,
        interceptors=interceptors,
    )


def _start_op(
    runtime: AgentRuntime, task_queue: str
) -> WithStartWorkflowOperation[AgentWorkflow, object]:
    return WithStartWorkflowOperation(
        AgentWorkflow.run,
        AgentInput(runtime=runtime),
        id=workflow_id(runtime.tenant, runtime.name),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )


async def wake(
    client: Client, runtime: AgentRuntime, trigger: Trigger, task_queue: str
) -> WakeResult:
    """Deliver a trigger (starting the agent's workflow if needed) and wait for its wake."""
    return await client.execute_update_with_start_workflow(
        AgentWorkflow.wake,
        trigger,
        start_workflow_operation=_start_op(runtime, task_queue),
        id=f"wake:{trigger.idempotency_key}",
    )


async def deliver(client: Client, runtime: AgentRuntime, trigger: Trigger, task_queue: str) -> None:
    """Deliver a trigger without waiting (signal-with-start). Returns once Temporal has it."""
    await client.start_workflow(
        AgentWorkflow.run,
        AgentInput(runtime=runtime),
        id=workflow_id(runtime.tenant, runtime.name),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        start_signal="trigger",
        start_signal_args=[trigger],
    )
