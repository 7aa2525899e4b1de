"""What the Temporal UI shows as an agent workflow's current details.

``workflow.set_current_details`` is kept in the workflow's memory and read with Temporal's
metadata query: it writes nothing into the history, so it may change as often as a wake
moves on. Markdown, a few short lines: who the agent is, its session, the last wake and
what is happening now.
"""

from __future__ import annotations

from temporalio import workflow

from wakeful.agents import AgentRuntime
from wakeful.workflows.state import AgentState

__all__ = ["show"]


def describe(rt: AgentRuntime, s: AgentState, now: str) -> str:
    """The details text (pure, for tests): agent, session, last wake, pacing, now."""
    lines = [f"**{rt.name}** ({rt.provider} {rt.model}) · tenant {rt.tenant}"]
    session = f"{rt.name}:{s.session_id}" if s.session_id else "none yet"
    lines.append(f"session {session} · {s.wakes} wakes · ${s.cost_usd:.4f} spent")
    last = s.results[-1] if s.results else None
    if last is not None:
        line = f"last wake #{last.number}: {last.status}, {last.model_calls} model calls"
        lines.append(line + (f" ({last.error})" if last.error else ""))
    if s.pacing is not None:
        lines.append(f"pacing: {s.pacing.choice} ({s.pacing.reason})")
    lines.append(f"now: {now}")
    return "\n\n".join(lines)


def show(rt: AgentRuntime, s: AgentState, now: str) -> None:
    """Set the workflow's current details (nothing is recorded in the history)."""
    workflow.set_current_details(describe(rt, s, now))
