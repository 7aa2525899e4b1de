"""What crosses the Temporal boundary: one pydantic model in, one out, per activity.

Only ids, hashes and small numbers cross; windows, model outputs and tool results stay in the
substrate (claim-check). Fields are added, never reordered or renamed: running workflows
deserialize these.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from wakeful.agents import AgentRuntime
from wakeful.compiler.blocks import Goal

# Activity names are a wire contract.
START_WAKE = "wakeful.start_wake"
COMPILE = "wakeful.compile"
CALL_MODEL = "wakeful.call_model"
RECORD_OUTPUT = "wakeful.record_output"
RUN_TOOL = "wakeful.run_tool"
FINISH_WAKE = "wakeful.finish_wake"


class _Msg(BaseModel):
    model_config = ConfigDict(frozen=True)


class Trigger(_Msg):
    """Something that should wake an agent. ``idempotency_key`` makes delivery at-most-once."""

    goal: Goal
    idempotency_key: str
    new_session: bool = False
    received_at: datetime | None = None


class WakeRef(_Msg):
    tenant: str
    agent: str
    wake_id: str
    session_id: str
    workflow_id: str
    number: int


class StartWakeIn(_Msg):
    wake: WakeRef
    goal: Goal
    idempotency_key: str
    started_at: datetime


class StartWakeOut(_Msg):
    ask_event_id: int


class CompileIn(_Msg):
    wake: WakeRef
    runtime: AgentRuntime
    goal: Goal
    call_index: int
    now: datetime


class CompileOut(_Msg):
    step_key: str
    window_hash: str
    stable_prefix_hash: str
    input_tokens: int
    max_event_id: int


class CallModelIn(_Msg):
    wake: WakeRef
    runtime: AgentRuntime
    call_index: int
    window_hash: str


class ToolCallRef(_Msg):
    id: str
    name: str


class CallModelOut(_Msg):
    output_hash: str
    stop_reason: str
    tool_calls: tuple[ToolCallRef, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0


class RecordOutputIn(_Msg):
    wake: WakeRef
    call_index: int
    output_hash: str
    at: datetime


class RecordOutputOut(_Msg):
    event_ids: tuple[int, ...]


class RunToolIn(_Msg):
    wake: WakeRef
    call_index: int
    output_hash: str
    tool_call: ToolCallRef
    at: datetime


class RunToolOut(_Msg):
    event_id: int
    result_hash: str
    is_error: bool
    reused: bool = Field(description="True when a retry found the result already recorded.")


class FinishWakeIn(_Msg):
    wake: WakeRef
    goal: Goal
    status: str
    at: datetime
    model_calls: int
    tool_calls: int


class FinishWakeOut(_Msg):
    handoff_id: int


class WakeResult(_Msg):
    wake_id: str
    number: int
    session_id: str
    status: str
    model_calls: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cost_usd: float
    handoff_id: int
    idempotency_key: str = ""
    deduplicated: bool = False
