"""The worker process: Wakeful's workflows and activities on one task queue."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from temporalio.client import Client
from temporalio.worker import Worker

from wakeful.activities.compile import CompileActivities
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.model import ModelActivities
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import WakeActivities
from wakeful.workflows.agent import AgentWorkflow

WORKFLOWS: list[type] = [AgentWorkflow]


def activities(deps: ActivityDeps) -> list[object]:
    wake = WakeActivities(deps)
    return [
        wake.start_wake,
        wake.record_output,
        wake.finish_wake,
        CompileActivities(deps).compile,
        ModelActivities(deps).call_model,
        ToolActivities(deps).run_tool,
    ]


def build_worker(
    client: Client, deps: ActivityDeps, task_queue: str, *, max_threads: int = 8
) -> Worker:
    """A worker serving every Wakeful workflow and activity; sync activities run in threads."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=WORKFLOWS,
        activities=activities(deps),
        activity_executor=ThreadPoolExecutor(max_workers=max_threads),
        max_concurrent_activities=max_threads,
    )
