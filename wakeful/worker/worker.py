"""The worker process: Wakeful's workflows and activities on one task queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import Interceptor, Worker, WorkerDeploymentConfig

from wakeful.activities.child import ChildActivities
from wakeful.activities.compile import CompileActivities
from wakeful.activities.consolidate_memory import consolidation_activities
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.model import ModelActivities
from wakeful.activities.sessions import SessionActivities
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import WakeActivities
from wakeful.worker.build_id import build_id
from wakeful.workflows.agent import AgentWorkflow
from wakeful.workflows.child import ChildAgentWorkflow
from wakeful.workflows.consolidation import ConsolidationWorkflow
from wakeful.workflows.scheduled import ScheduledWakeWorkflow

WORKFLOWS: list[type] = [
    AgentWorkflow,
    ChildAgentWorkflow,
    ScheduledWakeWorkflow,
    ConsolidationWorkflow,
]


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    wake = WakeActivities(deps)
    return [
        wake.start_wake,
        wake.record_output,
        wake.finish_wake,
        CompileActivities(deps).compile,  # opens the wake too, when asked
        ModelActivities(deps).call_model,
        ToolActivities(deps).run_tool,
        *session_activities(deps),
        *consolidation_activities(deps),
    ]


def session_activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """Sessions, keep-warm, trigger delivery, and child agents."""
    sessions, child = SessionActivities(deps), ChildActivities(deps)
    return [
        sessions.resume_agent,
        sessions.find_wake,
        sessions.end_session,
        sessions.keep_warm,
        sessions.deliver_trigger,
        sessions.record_tool_results,
        child.plan,
        child.prepare,
        child.collect,
        child.merge,
    ]


def build_worker(
    client: Client,
    deps: ActivityDeps,
    task_queue: str,
    *,
    max_threads: int = 32,
    interceptors: Sequence[Interceptor] = (),
    sandboxed: bool = True,
) -> Worker:
    """A worker serving every Wakeful workflow and activity, through a
    :class:`~wakeful.worker.plugin.WakefulPlugin` (``client`` must not carry one already):
    ``max_threads`` activities at once (``Settings.activity_threads``), sync ones each in a
    thread of its own.

    Model calls are async, so they hold a slot and no thread; but a slot all the same, so a
    worker runs at most ``max_threads`` model calls at a time, and a burst of agents' wakes
    beyond that waits on the task queue (``wakeful bench fleet``: 8 slots made a burst of
    64 wakes take 18.8 s, 32 slots 7.7 s). The slots are not split
    between model calls and tools: a sync activity given a slot but no thread would wait
    inside the worker with its timeouts running and no heartbeat.

    ``interceptors`` add to the client's (pass Temporal's ``TracingInterceptor`` here only
    when the client was built without it, or every span is recorded twice).
    ``sandboxed=False`` runs the workflows outside Temporal's sandbox
    (``Settings.workflow_sandbox``): no run-time guard against a non-deterministic call, and
    less CPU per workflow task.
    """
    # Imported here: the plugin lists this module's workflows and activities.
    from wakeful.worker.plugin import WakefulPlugin

    plugin = WakefulPlugin(deps, max_threads=max_threads, sandboxed=sandboxed)
    return Worker(
        client,
        task_queue=task_queue,
        interceptors=interceptors,
        deployment_config=deployment_config(),
        plugins=[plugin],
    )


def deployment_config() -> WorkerDeploymentConfig:
    """No versioning; a short build id, since every task's history stamp carries it."""
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name="wakeful", build_id=build_id()),
        use_worker_versioning=False,
    )
