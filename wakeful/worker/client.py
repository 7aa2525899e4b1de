"""Starting and waking agents from outside a workflow (CLI, ingress, schedules)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, Interceptor, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from wakeful.agents import AgentRuntime
from wakeful.contracts import Trigger, WakeResult, oversized_trigger
from wakeful.errors import RuntimeFailure, UserError
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


async def require_worker(
    client: Client, task_queue: str, hint: str, *, grace_s: float = 5.0
) -> None:
    """Raise :class:`RuntimeFailure` when no worker polls ``task_queue`` within ``grace_s``
    (a worker started a moment ago may not have polled yet), before a caller waits for work
    that nothing would run. Temporal remembers a queue's pollers for a few minutes, so a
    worker that stopped just now still counts: then the caller's own timeout reports it."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    deadline = time.monotonic() + grace_s
    while not (await client.workflow_service.describe_task_queue(request)).pollers:
        if time.monotonic() >= deadline:
            raise RuntimeFailure(
                f"no worker polls task queue {task_queue!r} (WAKEFUL_TASK_QUEUE), so nothing "
                f"would run this: {hint}"
            )
        await asyncio.sleep(0.25)


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
