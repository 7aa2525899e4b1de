"""Consolidation policy: when history is old enough to rewrite, and how memories age.

Data, not code: the policy travels in the workflow input (so a schedule pins the policy it
was created with) and every field has a default that suits an agent woken a few times a day.
Durations are ``timedelta`` so that Temporal's pydantic converter carries them exactly.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from wakeful.agents import AgentRuntime


class ConsolidationPolicy(BaseModel):
    """Horizons, span sizes, gate thresholds and memory-hygiene clocks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- which raw history is old enough --------------------------------------------------
    keep_recent_events: int = Field(
        40, ge=0, description="The newest events of the agent are never consolidated."
    )
    min_age: timedelta = Field(
        timedelta(hours=1), description="Events younger than this stay raw (the horizon)."
    )
    span_max_events: int = Field(40, ge=2, description="Largest turn span one summary covers.")
    span_max_chars: int = Field(24_000, ge=500, description="...and its largest text size.")
    span_min_events: int = Field(
        8, ge=1, description="Smaller spans wait for more history, unless their session closed."
    )
    max_spans_per_round: int = Field(
        50, ge=1, description="Oldest spans first; a backlog is worked off over several rounds."
    )
    session_idle: timedelta = Field(
        timedelta(hours=6), description="A session with no event for this long is closed."
    )

    # --- hierarchy ------------------------------------------------------------------------
    rollup_fanout: int = Field(
        4, ge=2, description="Open sessions roll their turn-span summaries up at this count."
    )
    period: timedelta = Field(
        timedelta(days=7), description="Session summaries are grouped into periods this long."
    )
    period_horizon: timedelta = Field(
        timedelta(days=7), description="A period is rolled up once it ended this long ago."
    )

    # --- promotion --------------------------------------------------------------------------
    constraint_ttl: timedelta | None = Field(
        None, description="Default expiry of a promoted constraint (None: until superseded)."
    )
    decision_ttl: timedelta | None = Field(
        timedelta(days=180), description="Default expiry of a promoted decision."
    )

    # --- model ----------------------------------------------------------------------------
    summary_model: str | None = Field(
        None, description="Model for summaries; None uses the agent's own model."
    )
    summary_max_tokens: int = Field(2_048, ge=64, description="Output cap of one summary.")

    # --- memory hygiene -------------------------------------------------------------------
    memory_sla: timedelta = Field(
        timedelta(days=14), description="A memory older than this needs re-verification."
    )
    decay_below_importance: float = Field(
        0.4, ge=0, le=1, description="Only memories less important than this decay."
    )
    decay_half_life: timedelta = Field(
        timedelta(days=30), description="Unused time that halves a memory's weight."
    )
    decay_floor: float = Field(
        0.1, ge=0, le=1, description="A decayed weight below this retires the memory."
    )
    delta_window: timedelta = Field(
        timedelta(days=30), description="How long a changed value is shown as a delta."
    )
    usage_compiles: int = Field(
        50, ge=1, description="How many recent compiles are read to learn which memories are used."
    )

    # --- dreaming merge -------------------------------------------------------------------
    merge_similarity: float = Field(
        0.8, gt=0, le=1, description="Content-word Jaccard at which two memories are duplicates."
    )
    max_rewrite_loss: float = Field(
        0.2, ge=0, le=1, description="A rewrite dropping more of its prior entries is rejected."
    )

    # --- pressure ---------------------------------------------------------------------------
    pressure_tokens: int = Field(
        1, ge=1, description="History tokens evicted for budget that count as pressure."
    )

    @model_validator(mode="after")
    def _check(self) -> ConsolidationPolicy:
        if self.span_min_events > self.span_max_events:
            raise ValueError(
                f"span_min_events ({self.span_min_events}) must not exceed "
                f"span_max_events ({self.span_max_events})"
            )
        if self.min_age < timedelta(0):
            raise ValueError("min_age must not be negative (0 consolidates history of any age)")
        for name in ("session_idle", "period", "memory_sla", "decay_half_life"):
            if getattr(self, name) <= timedelta(0):
                raise ValueError(f"{name} must be a positive duration")
        return self


def consolidation_policy(
    runtime: AgentRuntime, base: ConsolidationPolicy | None = None
) -> ConsolidationPolicy:
    """``base`` (the defaults) with the agent's consolidation settings
    (``Agent(consolidation_min_age=..., consolidation_keep_events=..., summary_model=...)``
    or its policy file's ``[consolidation]`` table); ``base`` itself when none is set."""
    base = base or ConsolidationPolicy()
    s = runtime.settings
    if s is None:
        return base
    update = {
        name: value
        for name, value in (
            ("min_age", s.consolidation_min_age),
            ("keep_recent_events", s.consolidation_keep_events),
            ("summary_model", s.summary_model),
        )
        if value is not None
    }
    return base.model_validate({**base.model_dump(), **update}) if update else base
