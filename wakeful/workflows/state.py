"""The agent workflow's state, input and query answers: plain pydantic, carried across
continue-as-new. Fields are added with defaults, never renamed: a running workflow's state
is deserialised by newer code.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from wakeful.agents import AgentRuntime
from wakeful.contracts import Trigger, WakeRef, WakeResult
from wakeful.workflows.pacing import CacheClock, PacingDecision, PacingPolicy

__all__ = [
    "AgentInput",
    "AgentState",
    "AgentStatus",
    "WakeBudget",
    "child_workflow_id",
    "workflow_id",
]


class WakeBudget(BaseModel):
    """What the current wake has spent, against its limits."""

    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    max_model_calls: int = 0
    max_tool_calls: int = 0
    max_tokens: int = 0


class AgentState(BaseModel):
    wakes: int = 0
    session_number: int = 0
    session_id: str = ""
    last_wake_at: datetime | None = None
    results: list[WakeResult] = Field(default_factory=list)
    pending: list[Trigger] = Field(default_factory=list)
    cost_usd: float = 0.0
    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    # Added with pacing, sessions and children.
    resumed: bool = Field(False, description="Counters were recovered from the substrate.")
    session_closed: bool = Field(False, description="The session ended (idle, budget, handoff).")
    last_wake: WakeRef | None = None
    last_window_hash: str = ""
    clock: CacheClock = Field(default_factory=CacheClock)
    pacing: PacingDecision | None = Field(None, description="The latest pacing decision.")
    keep_warm_at: list[datetime] = Field(default_factory=list)
    keep_warm_sent: int = 0
    idle_notes: list[str] = Field(default_factory=list)
    children: int = Field(0, description="Child agents started so far: <agent>/child/<n>.")
    last_model_calls: int = 0
    forgotten: bool = Field(
        False,
        description="Results of earlier wakes were let go of (or not recovered): a trigger "
        "whose key is not remembered is looked up in the substrate before it wakes the agent.",
    )

    @property
    def session_open(self) -> bool:
        return bool(self.session_id) and not self.session_closed


class AgentInput(BaseModel):
    runtime: AgentRuntime
    state: AgentState = Field(default_factory=AgentState)
    session_idle: timedelta = Field(
        timedelta(hours=1), description="A session idle this long ends (a handoff note is written)."
    )
    pacing: PacingPolicy = Field(default_factory=PacingPolicy)
    wakes_per_run: int = Field(200, ge=1, description="Continue-as-new after this many wakes.")
    remembered_results: int = Field(
        256, ge=1, description="Wake results (and their idempotency keys) kept in the state."
    )


class AgentStatus(BaseModel):
    agent: str
    wakes: int
    session_id: str
    current_wake: str | None
    pending: int
    cost_usd: float
    input_tokens: int
    cache_read_input_tokens: int
    last_wake_at: datetime | None
    session_open: bool = True
    stop_requested: bool = False
    budget: WakeBudget | None = Field(None, description="The current wake's spend; None idle.")
    cache_clock: CacheClock | None = None
    pacing: str = Field("", description="The latest pacing decision and why.")
    children_in_flight: int = 0


def workflow_id(tenant: str, agent: str) -> str:
    return f"wakeful-agent:{tenant}:{agent}"


def child_workflow_id(tenant: str, child: str) -> str:
    return f"wakeful-child:{tenant}:{child}"
