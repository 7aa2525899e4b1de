"""What crosses the Temporal boundary in a consolidation: ids, keys, hashes and counts.

One pydantic model in, one out, per activity; fields are added, never reordered or renamed.
Summaries and model outputs stay in the substrate (the summarise activity returns the hash
of the stored reply). Activity names are a wire contract.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from wakeful.agents import AgentRuntime
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.spans import Span
from wakeful.wire import WireModel

PRESSURE = "wakeful.consolidate.pressure"
PLAN = "wakeful.consolidate.plan"
CAPTURE = "wakeful.consolidate.capture"
SUMMARISE = "wakeful.consolidate.summarise"
COMMIT = "wakeful.consolidate.commit"
HYGIENE = "wakeful.consolidate.hygiene"
DREAM = "wakeful.consolidate.dream"

Reason = Literal["schedule", "demand", "pressure"]


class _Msg(WireModel):
    model_config = ConfigDict(frozen=True)


class ConsolidationInput(_Msg):
    """The workflow's input; a schedule stores one of these as its action."""

    runtime: AgentRuntime
    policy: ConsolidationPolicy = Field(default_factory=ConsolidationPolicy)
    reason: Reason = "demand"
    only_if_pressured: bool = Field(
        False, description="Do nothing unless the latest compile evicted history for budget."
    )


class AgentIn(_Msg):
    tenant: str
    agent: str
    now: datetime
    round_id: str
    policy: ConsolidationPolicy = Field(default_factory=ConsolidationPolicy)


class PressureOut(_Msg):
    pressured: bool
    compile_step: str | None = None
    evicted_tokens: int = 0
    pressure_rows: int = 0


class PlanIn(_Msg):
    agent: AgentIn
    level: int = 1


class PlanOut(_Msg):
    spans: tuple[Span, ...] = ()


class CaptureOut(_Msg):
    promoted: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()
    facts: int = 0


class SpanIn(_Msg):
    agent: AgentIn
    span: Span
    provider: str
    model: str


class DraftOut(_Msg):
    output_hash: str
    reused: bool = Field(description="True when a retry found the draft already stored.")


class CommitIn(_Msg):
    agent: AgentIn
    span: Span
    output_hash: str


class CommitOut(_Msg):
    status: str = Field(description="accepted, exists (committed before), rejected or raced.")
    summary_id: int | None = None
    reasons: tuple[str, ...] = ()


class HygieneOut(_Msg):
    annotated: int = 0
    deltas: int = 0
    expired_deltas: int = 0
    stale: int = 0
    reverified: int = 0
    changed: int = 0
    decayed: int = 0


class DreamOut(_Msg):
    merged: int = 0
    rejected: int = 0
    conflicts: int = 0


class ConsolidationResult(_Msg):
    agent: str
    reason: Reason
    skipped: str | None = None
    spans: int = 0
    accepted: int = 0
    rejected: int = 0
    raced: int = 0
    rollups: int = 0
    promoted: int = 0
    revoked: int = 0
    facts: int = 0
    rejections: tuple[str, ...] = ()
    hygiene: HygieneOut | None = None
    dream: DreamOut | None = None
