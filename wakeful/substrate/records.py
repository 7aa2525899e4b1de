"""Typed rows going in and out of the substrate.

These are the repository's vocabulary; SQL never leaks past :mod:`wakeful.substrate.store`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# ``evidence``: what retrieval brought a wake, as the window sent it (recorded by the compile
# activity; never indexed, summarised or counted as a turn).
EventKind = Literal["turn", "tool_call", "tool_result", "evidence"]


class EventIn(BaseModel):
    """One event to append. ``step_key`` makes the append idempotent."""

    model_config = ConfigDict(frozen=True)

    step_key: str
    kind: EventKind
    text: str
    role: Literal["user", "assistant"] | None = None
    session_id: str | None = None
    wake_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    is_error: bool = False
    resolved: bool = False
    event_time: datetime
    external_id: str | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    user_id: str | None = Field(
        default=None, description="The user the writing wake served (None: agent-wide)."
    )


class StoredEvent(EventIn):
    id: int
    content_hash: str
    ingest_time: datetime
    retired_at: datetime | None = None
    retired_by: str | None = Field(default=None, description="e.g. summary:12")
    retired_rev: int | None = Field(
        default=None, description="The agent's knowledge revision that retired it."
    )


class WakeRecord(BaseModel):
    wake_id: str
    agent: str
    session_id: str
    workflow_id: str
    number: int
    goal: dict[str, Any]
    idempotency_key: str | None = None
    status: str = "running"
    started_at: datetime
    finished_at: datetime | None = None
    user_id: str | None = None  # the user the wake served (None: the agent's own wake)


class CompileRecord(BaseModel):
    """What a compile used and produced: enough to recompile it byte-for-byte."""

    agent: str
    wake_id: str
    step_key: str
    call_index: int
    as_of: datetime
    max_event_id: int
    goal: dict[str, Any]
    policy_hash: str
    snapshot_hash: str
    window_hash: str
    ledger_hash: str
    stable_prefix_hash: str
    input_tokens: int
    tokens_by_bucket: dict[str, int]
    retrieval_hash: str | None = Field(
        default=None, description="Blob of the retrieval hits used; None when none were."
    )
    revision: int | None = Field(
        default=None,
        description="The agent's knowledge revision the snapshot was read at; None for "
        "compiles recorded before revisions existed (a replay reads the substrate as now).",
    )
    spec_hash: str | None = Field(default=None, description="Blob of the agent spec used.")
    recent_limit: int | None = Field(default=None, description="Raw events the tail loaded.")
    alternates: dict[str, Any] | None = Field(
        default=None,
        description="Failover: the window's blob rendered for each route, in order "
        "({'routes': [[provider/model, blob]], 'after_attempts': n, 'cooldown_s': s}).",
    )


class ModelCallRecord(BaseModel):
    agent: str
    wake_id: str
    step_key: str
    call_index: int
    provider: str
    model: str
    window_hash: str
    output_hash: str
    stop_reason: str
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    cost_usd: float
    failover: dict[str, Any] | None = Field(
        default=None,
        description="Which route served when it was not the agent's own, and why: "
        "{'served': 'provider/model', 'passed': [{'route': ..., 'reason': ...}]}.",
    )


class Spend(BaseModel):
    """What model calls cost: dollars and tokens (input of every kind, and output)."""

    usd: float = 0.0
    tokens: int = 0


class HandoffBody(BaseModel):
    """A handoff note's stable sections, in a fixed order (it sits in the cached prefix)."""

    goal: str
    current_state: str
    decisions: list[str] = Field(default_factory=list, description="Load-bearing decision ids.")
    blockers: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list, description="Links: event ids, blob hashes.")

    def render(self) -> str:
        def section(title: str, items: list[str]) -> str:
            body = "\n".join(f"- {item}" for item in items) if items else "- (none)"
            return f"## {title}\n{body}"

        return "\n\n".join(
            [
                f"## Goal\n{self.goal}",
                f"## Current state\n{self.current_state}",
                section("Decisions", self.decisions),
                section("Blockers", self.blockers),
                section("Next actions", self.next_actions),
                section("Evidence", self.evidence),
            ]
        )


class HandoffRecord(BaseModel):
    id: int | None = None
    agent: str
    session_id: str
    wake_id: str
    step_key: str
    body: HandoffBody
    created_at: datetime | None = None
    user_id: str | None = None  # the user of the wake that wrote it (None: agent-wide)


DecisionSource = Literal["consolidation", "tool", "person"]


class DecisionRecord(BaseModel):
    decision_id: str
    agent: str
    text: str
    source_event: int | None = None
    expires_at: datetime | None = None
    superseded_by: str | None = None
    created_at: datetime | None = None
    key: str | None = None
    rationale: str | None = None
    source: DecisionSource = "consolidation"
    retired_at: datetime | None = None
    retired_by: str | None = None
    # A proposal: the person's decision it would replace. A person's decision stands until
    # a person changes it, so the model's decision on its key waits for one (never live).
    proposal_for: str | None = None
    user_id: str | None = None  # the user whose wake recorded it (None: agent-wide)

    def status(
        self, at: datetime
    ) -> Literal["live", "proposed", "superseded", "retired", "expired"]:
        """Where the decision stands at ``at`` (an announced expiry is ``expired`` too)."""
        if self.superseded_by is not None:
            return "superseded"
        if self.retired_by is not None and self.retired_by.startswith(EXPIRED_BY):
            return "expired"
        if self.retired_at is not None and self.retired_at <= at:
            return "retired"
        if self.expires_at is not None and self.expires_at <= at:
            return "expired"
        return "live" if self.proposal_for is None else "proposed"


# ``retired_by`` of a decision the compile retired at its expiry: "expired@<compile step>".
EXPIRED_BY = "expired@"


class MemoryRecord(BaseModel):
    id: int | None = None
    agent: str
    step_key: str
    key: str
    text: str
    source: str
    scope: str = "agent"
    verification: str = "unverified"
    importance: float = 0.5
    captured_at: datetime
    supersedes: int | None = None
    invalidated_at: datetime | None = None
    user_id: str | None = None  # the user whose wake wrote it (None: agent-wide)


class SummaryRecord(BaseModel):
    id: int | None = None
    agent: str
    step_key: str
    level: int
    span_start: int
    span_end: int
    text: str
    gate: dict[str, Any] = Field(default_factory=dict)
    superseded_by: int | None = None
    created_at: datetime | None = None


class ConsolidationLogRecord(BaseModel):
    """One thing consolidation did (or refused to do), and why."""

    id: int | None = None
    agent: str
    step_key: str
    round_id: str
    action: str = Field(description="draft, summary, rollup, annotate, reverify, decay, merge")
    status: str = Field(description="drafted, accepted, exists, rejected, raced, retired, ...")
    subject: str = Field(description="What it acted on: a span key, memory ids, a key.")
    summary_id: int | None = None
    output_hash: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
