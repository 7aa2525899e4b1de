"""The agent workflow's state, input and query answers: plain pydantic, carried across
continue-as-new. Fields are added with defaults, never renamed: a running workflow's state
is deserialised by newer code.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field, model_validator

from wakeful.agents import AgentRuntime
from wakeful.contracts import AGENT_ID_PREFIX, Trigger, WakeRef, WakeResult
from wakeful.names import check_agent_name, check_tenant, is_agent_name, is_name
from wakeful.workflows.pacing import CacheClock, PacingDecision, PacingPolicy

__all__ = [
    "AGENT_ID_PREFIX",
    "CHILD_ID_PREFIX",
    "AgentInput",
    "AgentState",
    "AgentStatus",
    "WakeBudget",
    "child_workflow_id",
    "parse_workflow_id",
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
    idle_kept_at: datetime | None = Field(
        None,
        description="The last_wake_at of the idle period whose timer priced continuing the "
        "session cheaper than a handoff (no handoff_after_idle set): the session stays "
        "open and the idle timer does not fire again before the next wake.",
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
    session_idle_set: bool = Field(
        False,
        description="session_idle was set (the agent's or its policy's handoff_after_idle, or "
        "the caller's): a session idle that long always ends. Unset, the session ends then "
        "unless pacing prices continuing it (a cold rewrite) cheaper than a handoff.",
    )
    pacing: PacingPolicy = Field(default_factory=PacingPolicy)
    wakes_per_run: int = Field(200, ge=1, description="Continue-as-new after this many wakes.")
    remembered_results: int = Field(
        256, ge=1, description="Wake results (and their idempotency keys) kept in the state."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_settings(cls, data: Any) -> Any:
        """A new input takes its pacing and idle limit from the agent's settings
        (``wakeful.runtime_settings``) where it gives none; one read back from a history
        holds both already, so a replay sees the input it started with."""
        if not isinstance(data, dict):
            return data
        if "session_idle_set" not in data:
            # A caller's idle limit is a set one; so is that of an input read back from a
            # history recorded before this field (it had session_idle, set or not).
            data = {**data, "session_idle_set": "session_idle" in data}
        if "pacing" in data and "session_idle" in data:
            return data
        runtime = data.get("runtime")
        if isinstance(runtime, dict):
            runtime = AgentRuntime.model_validate(runtime)
        settings = runtime.settings if isinstance(runtime, AgentRuntime) else None
        if settings is None:
            return data
        data = dict(data)
        if "pacing" not in data and settings.keep_warm_calls is not None:
            data["pacing"] = PacingPolicy(
                max_keep_warm_calls=settings.keep_warm_calls,
                allow_keep_warm=settings.keep_warm_calls > 0,
            )
        if "session_idle" not in data and settings.handoff_after_idle is not None:
            data["session_idle"] = settings.handoff_after_idle
            data["session_idle_set"] = True
        return data


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


CHILD_ID_PREFIX = "wakeful-child:"


def _id(prefix: str, tenant: str, agent: str) -> str:
    # Neither name may hold ':' (names.py), so the tenant ends at the first ':' after the
    # prefix and no two (tenant, agent) pairs build the same id. The format is unchanged
    # for valid names: running workflows keep their ids.
    check_tenant(tenant)
    check_agent_name(agent, child=True)
    return f"{prefix}{tenant}:{agent}"


def workflow_id(tenant: str, agent: str) -> str:
    """The agent's workflow id; :class:`~wakeful.errors.ConfigError` for an invalid name."""
    return _id(AGENT_ID_PREFIX, tenant, agent)


def child_workflow_id(tenant: str, child: str) -> str:
    """A child agent's workflow id; :class:`~wakeful.errors.ConfigError` for an invalid name."""
    return _id(CHILD_ID_PREFIX, tenant, child)


def parse_workflow_id(wf_id: str) -> tuple[str, str]:
    """The (tenant, agent) of an agent's or child's workflow id; ``ValueError`` otherwise."""
    for prefix in (AGENT_ID_PREFIX, CHILD_ID_PREFIX):
        if wf_id.startswith(prefix):
            tenant, sep, agent = wf_id.removeprefix(prefix).partition(":")
            if sep and is_name(tenant) and is_agent_name(agent):
                return tenant, agent
    raise ValueError(f"{wf_id!r} is not an agent's workflow id")
