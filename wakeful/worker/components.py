"""What a Wakeful worker serves: its workflows and its activities.

Shared by :mod:`wakeful.worker.worker` (``build_worker``) and
:mod:`wakeful.worker.plugin` (``WakefulPlugin``); it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wakeful.activities.child import ChildActivities
from wakeful.activities.compile import CompileActivities
from wakeful.activities.consolidate_memory import consolidation_activities
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.model import ModelActivities
from wakeful.activities.sessions import SessionActivities
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import WakeActivities
from wakeful.workflows.agent import AgentWorkflow
from wakeful.workflows.child import ChildAgentWorkflow
from wakeful.workflows.consolidation import ConsolidationWorkflow
from wakeful.workflows.scheduled import ScheduledWakeWorkflow

__all__ = ["WORKFLOWS", "activities", "session_activities"]

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
