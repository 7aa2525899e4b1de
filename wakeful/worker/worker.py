"""The worker process: Wakeful's workflows and activities on one task queue."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import Interceptor, Worker, WorkerDeploymentConfig

from wakeful.activities.deps import ActivityDeps
from wakeful.worker.build_id import build_id
from wakeful.worker.components import WORKFLOWS, activities, session_activities
from wakeful.worker.plugin import WakefulPlugin

__all__ = ["WORKFLOWS", "activities", "build_worker", "deployment_config", "session_activities"]


def build_worker(
    client: Client,
    deps: ActivityDeps,
    task_queue: str,
    *,
    max_threads: int = 32,
    interceptors: Sequence[Interceptor] = (),
    sandboxed: bool = True,
    sticky_queue_schedule_to_start_timeout: timedelta = timedelta(seconds=10),
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
    ``sticky_queue_schedule_to_start_timeout`` (Temporal's name; its default, 10 s): how long
    a workflow's next task waits for this worker, which holds the workflow cached, before
    any worker on the queue may take it. A worker that dies unannounced (SIGKILL, a lost
    host) holds its workflows' next tasks back by that much.
    """
    plugin = WakefulPlugin(deps, max_threads=max_threads, sandboxed=sandboxed)
    return Worker(
        client,
        task_queue=task_queue,
        interceptors=interceptors,
        deployment_config=deployment_config(),
        plugins=[plugin],
        sticky_queue_schedule_to_start_timeout=sticky_queue_schedule_to_start_timeout,
    )


def deployment_config() -> WorkerDeploymentConfig:
    """No versioning; a short build id, since every task's history stamp carries it."""
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name="wakeful", build_id=build_id()),
        use_worker_versioning=False,
    )
