"""Starting and waking agents from outside a workflow (CLI, ingress, schedules)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TypedDict, Unpack

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client as TemporalClient
from temporalio.client import (
    Interceptor,
    Plugin,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from wakeful.agents import Agent, AgentRuntime
from wakeful.compiler.blocks import Goal, GoalKind
from wakeful.contracts import (
    APPROVALS_QUERY,
    APPROVE_UPDATE,
    RESULT_QUERY,
    ApprovalDecision,
    PendingApproval,
    Trigger,
    WakeResult,
    oversized_trigger,
    with_answer,
)
from wakeful.errors import RuntimeFailure, UserError
from wakeful.idempotency import trigger_key
from wakeful.routing import routing
from wakeful.users import check_user
from wakeful.worker.codec import data_converter
from wakeful.worker.streaming import WakeEvent, WakeFinished, tail_wake
from wakeful.worker.temporal_env import connect_config
from wakeful.workflows.agent import AgentInput, AgentWorkflow, workflow_id


async def connect(
    address: str | None = None,
    namespace: str | None = None,
    *,
    interceptors: Sequence[Interceptor] = (),
    environ: Mapping[str, str] | None = None,
    plugins: Sequence[Plugin] = (),
) -> TemporalClient:
    """A client with Wakeful's data converter (pydantic, compressed: see ``codec``).

    The connection comes from Temporal's environment configuration (profiles file,
    ``TEMPORAL_ADDRESS``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS_*``: see ``temporal_env``),
    read from ``environ`` (default: the process environment); ``address`` and ``namespace``
    override the profile's. Raises :class:`~wakeful.errors.ConfigError` for a bad profile or
    an unreadable certificate file.

    ``interceptors`` that are also worker interceptors (Temporal's ``TracingInterceptor``)
    apply to workers built on it too, and so do ``plugins`` that are also worker plugins
    (:class:`~wakeful.worker.plugin.WakefulPlugin`)."""
    config = connect_config(address, namespace, environ=environ)
    return await TemporalClient.connect(
        **config,
        data_converter=data_converter,
        interceptors=interceptors,
        plugins=plugins,
    )


async def require_worker(
    client: TemporalClient, task_queue: str, hint: str, *, grace_s: float = 5.0
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
                f"no worker polls task queue {task_queue!r} (WAKEFUL_TASK_QUEUE; waited "
                f"{grace_s:g} s, WAKEFUL_WORKER_WAIT_S), so nothing would run this: {hint}"
            )
        await asyncio.sleep(min(0.25, max(deadline - time.monotonic(), 0.0)))


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


WAKE_UPDATE = "wake"  # AgentWorkflow.wake


def check_trigger(runtime: AgentRuntime, trigger: Trigger) -> None:
    """Refuse a trigger larger than ``MAX_TRIGGER_BYTES`` before it reaches Temporal."""
    why = oversized_trigger(trigger, runtime.name)
    if why is not None:
        raise UserError(why)


async def wake(
    client: TemporalClient, runtime: AgentRuntime, trigger: Trigger, task_queue: str
) -> WakeResult:
    """Deliver a trigger (starting the agent's workflow if needed) and wait for its wake.

    Raises :class:`~wakeful.errors.UserError` for a trigger over ``MAX_TRIGGER_BYTES``.
    """
    check_trigger(runtime, trigger)
    # By name with its result type: the SDK's typing does not see an async update's result.
    result: WakeResult = await client.execute_update_with_start_workflow(
        WAKE_UPDATE,
        trigger,
        result_type=WakeResult,
        start_workflow_operation=_start_op(runtime, task_queue),
        id=f"wake:{trigger.idempotency_key}",
    )
    return await answered(client, workflow_id(runtime.tenant, runtime.name), result)


async def answered(client: TemporalClient, agent_workflow: str, result: WakeResult) -> WakeResult:
    """The wake update's ``result`` with its answer, which the update leaves out (the
    workflow's history holds it once already): read with the workflow's ``result`` query,
    which writes nothing into the history."""
    if not result.output_by_query:
        return result
    handle = client.get_workflow_handle(agent_workflow)
    kept: WakeResult | None = await handle.query(
        RESULT_QUERY,
        result.idempotency_key,
        result_type=WakeResult | None,  # type: ignore[arg-type]
    )
    return with_answer(result, kept)


async def deliver(
    client: TemporalClient, runtime: AgentRuntime, trigger: Trigger, task_queue: str
) -> None:
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


async def pending_approvals(
    client: TemporalClient, tenant: str, agent: str
) -> list[PendingApproval]:
    """The agent's tool calls waiting for approval (none when its workflow is not running).

    Raises :class:`~wakeful.errors.ConfigError` for an invalid name."""
    handle = client.get_workflow_handle(workflow_id(tenant, agent))
    try:
        found: list[PendingApproval] = await handle.query(
            APPROVALS_QUERY, result_type=list[PendingApproval]
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return []
        raise
    return found


async def decide_approval(
    client: TemporalClient, tenant: str, agent: str, decision: ApprovalDecision
) -> PendingApproval:
    """Approve or deny a waiting tool call; answers the call decided.

    Raises :class:`~wakeful.errors.UserError` when the agent has no running workflow or no
    call with that id waits for approval (unknown, already decided or timed out)."""
    handle = client.get_workflow_handle(workflow_id(tenant, agent))
    try:
        decided: PendingApproval = await handle.execute_update(
            APPROVE_UPDATE, decision, result_type=PendingApproval
        )
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == "UnknownApprovalCall":
            raise UserError(
                f"agent {agent!r}: {cause.message}; see `wakeful approvals list {agent}`"
            ) from None
        raise
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise UserError(
                f"agent {agent!r} of tenant {tenant!r} is not running, so no call of it waits"
                " for approval"
            ) from None
        raise
    return decided


class WakeHandle:
    """A wake that was delivered and accepted; :meth:`result` waits for it to finish."""

    def __init__(
        self, update: WorkflowUpdateHandle[WakeResult], key: str, temporal: TemporalClient
    ) -> None:
        self._update = update
        self._temporal = temporal
        self.idempotency_key = key

    async def result(self) -> WakeResult:
        """The wake's result (its answer in ``output``), once it has finished. Wrap it in
        ``asyncio.timeout`` to wait at most so long (the wake goes on)."""
        result = await self._update.result()
        return await answered(self._temporal, self._update.workflow_id, result)


class WakeOptions(TypedDict, total=False):
    """How a wake is keyed and routed (:meth:`Client.start`'s keyword arguments)."""

    key: str | None
    new_session: bool
    intents: Sequence[str]
    paths: Sequence[str]
    task_class: str | None
    user: str | None


class Client:
    """Wake agents from Python, and get their answers back.

    ::

        client = await wakeful.Client.connect()
        result = await client.wake(agent, "How is checkout doing?")
        print(result.status, result.output)

    ``agent`` is the :class:`~wakeful.agents.Agent` a worker serves (or its runtime). A
    wake is keyed by its idempotency key: the same key never wakes the agent twice, and
    asking again returns the first wake's result.
    """

    def __init__(
        self,
        temporal: TemporalClient,
        *,
        task_queue: str = "wakeful",
        database_url: str | None = None,
    ) -> None:
        self.temporal = temporal
        self.task_queue = task_queue
        # The substrate's Postgres, which :meth:`stream` reads a running wake from.
        self.database_url = database_url

    @classmethod
    async def connect(
        cls,
        address: str | None = None,
        namespace: str | None = None,
        *,
        task_queue: str | None = None,
    ) -> Client:
        """Connect to Temporal: ``address`` and ``namespace``, else the settings
        (``WAKEFUL_TEMPORAL_ADDRESS``, ``WAKEFUL_TEMPORAL_NAMESPACE``), else the embedded
        stack a local ``wakeful worker`` runs. The substrate's Postgres (for :meth:`stream`)
        is ``WAKEFUL_DATABASE_URL``, else the embedded stack's."""
        from wakeful.worker.settings import load_settings

        s = load_settings()
        database_url = s.database_url
        if address is None:
            if s.temporal_address:
                address = s.temporal_address
            else:
                from wakeful.worker.stack import EmbeddedStack

                up = await asyncio.to_thread(EmbeddedStack(s).up)
                address, database_url = up.temporal_address, up.database_url
        temporal = await connect(address, namespace or s.temporal_namespace)
        return cls(temporal, task_queue=task_queue or s.task_queue, database_url=database_url)

    async def wake(
        self, agent: Agent | AgentRuntime, message: str, **options: Unpack[WakeOptions]
    ) -> WakeResult:
        """Wake ``agent`` with ``message`` and wait for the wake's result; ``options`` are
        :meth:`start`'s."""
        handle = await self.start(agent, message, **options)
        return await handle.result()

    async def stream(
        self, agent: Agent | AgentRuntime, message: str, **options: Unpack[WakeOptions]
    ) -> AsyncIterator[WakeEvent]:
        """Wake ``agent`` with ``message`` and yield what its model calls say as they say it
        (:class:`~wakeful.worker.streaming.TextDelta`,
        :class:`~wakeful.worker.streaming.ToolCallEvent`), then
        :class:`~wakeful.worker.streaming.WakeFinished` with the result (the same as
        :meth:`wake`'s). The pieces are read from the substrate's Postgres
        (``database_url``); ``options`` are :meth:`start`'s. ::

            async for event in client.stream(agent, "Summarise the incident"):
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
        """
        trigger = self._trigger(message, **options)  # a bad option first: it is the caller's
        if self.database_url is None:
            raise UserError(
                "Client.stream reads the wake from the substrate: give the Client a"
                " database_url (Client.connect() finds it from the settings)"
            )
        runtime = agent.runtime() if isinstance(agent, Agent) else agent
        async for event in stream_wake(
            self.temporal, runtime, trigger, self.task_queue, self.database_url
        ):
            yield event

    @staticmethod
    def _trigger(
        message: str,
        *,
        key: str | None = None,
        new_session: bool = False,
        intents: Sequence[str] = (),
        paths: Sequence[str] = (),
        task_class: str | None = None,
        user: str | None = None,
    ) -> Trigger:
        route = routing(intents, paths, task_class)
        return Trigger(
            goal=route.apply(Goal(kind=GoalKind.MESSAGE, text=message)),
            idempotency_key=trigger_key("client", key if key is not None else uuid.uuid4().hex),
            new_session=new_session,
            user=check_user(user),
        )

    async def start(
        self,
        agent: Agent | AgentRuntime,
        message: str,
        *,
        key: str | None = None,
        new_session: bool = False,
        intents: Sequence[str] = (),
        paths: Sequence[str] = (),
        task_class: str | None = None,
        user: str | None = None,
    ) -> WakeHandle:
        """Deliver the message and return once the agent's workflow has accepted it.
        ``key`` is the wake's idempotency key (a new one if not given); ``intents``,
        ``paths`` and ``task_class`` are the goal's, for the compile policy's triggers;
        ``user`` the user the wake serves (``wakeful.users``: it reads agent-wide memory
        and that user's, and what it writes is that user's; None: an agent-wide wake). A
        bad ``user`` is a :class:`~wakeful.errors.UserError` naming what is wrong."""
        runtime = agent.runtime() if isinstance(agent, Agent) else agent
        user_key = key if key is not None else uuid.uuid4().hex
        route = routing(intents, paths, task_class)
        trigger = Trigger(
            goal=route.apply(Goal(kind=GoalKind.MESSAGE, text=message)),
            idempotency_key=trigger_key("client", user_key),
            new_session=new_session,
            user=check_user(user),
        )
        check_trigger(runtime, trigger)
        update: WorkflowUpdateHandle[
            WakeResult
        ] = await self.temporal.start_update_with_start_workflow(
            WAKE_UPDATE,
            trigger,
            result_type=WakeResult,
            start_workflow_operation=_start_op(runtime, self.task_queue),
            id=f"wake:{trigger.idempotency_key}",
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        )
        return WakeHandle(update, user_key, self.temporal)

    async def pending(self, agent: Agent | AgentRuntime) -> list[PendingApproval]:
        """The agent's tool calls waiting for a person's approval."""
        runtime = agent.runtime() if isinstance(agent, Agent) else agent
        return await pending_approvals(self.temporal, runtime.tenant, runtime.name)

    async def approve(
        self,
        agent: Agent | AgentRuntime,
        call_id: str,
        *,
        approved: bool = True,
        reason: str = "",
        by: str = "",
    ) -> PendingApproval:
        """Approve (or, ``approved=False``, deny with ``reason``) a waiting tool call.
        Raises :class:`~wakeful.errors.UserError` when no call ``call_id`` waits."""
        runtime = agent.runtime() if isinstance(agent, Agent) else agent
        decision = ApprovalDecision(call_id=call_id, approved=approved, reason=reason, by=by)
        return await decide_approval(self.temporal, runtime.tenant, runtime.name, decision)


async def stream_wake(
    temporal: TemporalClient,
    runtime: AgentRuntime,
    trigger: Trigger,
    task_queue: str,
    database_url: str,
) -> AsyncIterator[WakeEvent]:
    """Deliver ``trigger`` (starting the agent's workflow if needed) and yield its wake's
    text pieces and tool calls as they come, then :class:`WakeFinished`."""
    check_trigger(runtime, trigger)
    update = await temporal.start_update_with_start_workflow(
        WAKE_UPDATE,
        trigger,
        result_type=WakeResult,
        start_workflow_operation=_start_op(runtime, task_queue),
        id=f"wake:{trigger.idempotency_key}",
        wait_for_stage=WorkflowUpdateStage.ACCEPTED,
    )

    async def result() -> WakeResult:
        done: WakeResult = await update.result()
        return await answered(temporal, workflow_id(runtime.tenant, runtime.name), done)

    finished = asyncio.ensure_future(result())
    try:
        async for event in tail_wake(
            database_url, runtime.tenant, runtime.name, trigger.idempotency_key, finished
        ):
            yield event
        yield WakeFinished(await finished)
    finally:
        if not finished.done():
            finished.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await finished
