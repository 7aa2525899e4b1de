"""Starting and waking agents from outside a workflow (CLI, ingress, schedules)."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.client import Client, Interceptor, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from wakeful.agents import AgentRuntime
from wakeful.contracts import Trigger, WakeResult, oversized_trigger
from wakeful.errors import UserError
from wakeful.worker.codec import data_converter
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id


async def connect(
    address: str, namespace: str, *, interceptors: Sequence[Interceptor] = ()
) -> Client:
    """A client with Wakeful's data converter (pydantic, compressed: see ``codec``).

    ``interceptors`` that are also worker interceptors (Temporal's ``TracingInterceptor``)
    apply to workers built on it too."""
    return await Client.connect(
        address,
        namespace=namespace,
        data_converter=data_converter,
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


def check_trigger(runtime: AgentRuntime, trigger: Trigger) -> None:
    """Refuse a trigger larger than ``MAX_TRIGGER_BYTES`` before it reaches Temporal."""
    why = oversized_trigger(trigger, runtime.name)
    if why is not None:
        raise UserError(why)


async def wake(
    client: Client, runtime: AgentRuntime, trigger: Trigger, task_queue: str
) -> WakeResult:
    """Deliver a trigger (starting the agent's workflow if needed) and wait for its wake.

    Raises :class:`~wakeful.errors.UserError` for a trigger over ``MAX_TRIGGER_BYTES``.
    """
    check_trigger(runtime, trigger)
    return await client.execute_update_with_start_workflow(
        AgentWorkflow.wake,
        trigger,
        start_workflow_operation=_start_op(runtime, task_queue),
        id=f"wake:{trigger.idempotency_key}",
    )


async def deliver(client: Client, runtime: AgentRuntime, trigger: Trigger, task_queue: str) -> None:
    """Deliver a trigger without waiting (signal-with-start). Returns once Temporal has it.

    Raises :class:`~wakeful.errors.UserError` for a trigger over ``MAX_TRIGGER_BYTES``.
    """
    check_trigger(runtime, trigger)
    await client.start_workflow(
        AgentWorkflow.run,
        AgentInput(runtime=runtime),
        id=workflow_id(runtime.tenant, runtime.name),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        start_signal="trigger",
        start_signal_args=[trigger],
    )
