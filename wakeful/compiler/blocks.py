"""Blocks: the typed candidates the compiler chooses from.

Every piece of context an agent could show a model is a :class:`Block`. The substrate turns
rows into blocks (a point-in-time :class:`Snapshot`); the compiler decides which blocks enter
the window, where, and why. Blocks are immutable values: passes return new blocks, they never
mutate the ones they were given.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wakeful.compiler.canonical import recorded_json


class BlockKind(StrEnum):
    """What a block is. The value is a wire name: stored in ledgers, never renamed."""

    TOOL_SCHEMA = "tool_schema"
    SYSTEM_RULE = "system_rule"
    SKILL_INDEX = "skill_index"
    SKILL_BODY = "skill_body"
    TASK_FRAME = "task_frame"
    LOAD_BEARING = "load_bearing"
    HANDOFF_NOTE = "handoff_note"
    SUMMARY = "summary"
    MEMORY = "memory"
    RETRIEVED = "retrieved"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TURN = "turn"
    CURRENT_ASK = "current_ask"


class Stability(StrEnum):
    """How often a block's bytes change; decides its cache segment."""

    STABLE = "stable"
    SEMI_STABLE = "semi_stable"
    DYNAMIC = "dynamic"
    TAIL = "tail"


class Segment(StrEnum):
    """Where a block sits in the window, in placement order (stable first)."""

    STABLE = "stable"
    SEMI_STABLE = "semi_stable"
    SUMMARIES = "summaries"
    RECENT = "recent"
    EVIDENCE = "evidence"
    ASK = "ask"


SEGMENT_ORDER: tuple[Segment, ...] = tuple(Segment)

# The segment a kind lands in. Turns and tool traffic are "recent"; the compiler may demote
# old ones to evidence-free eviction but never moves them ahead of the summaries.
KIND_SEGMENT: dict[BlockKind, Segment] = {
    BlockKind.TOOL_SCHEMA: Segment.STABLE,
    BlockKind.SYSTEM_RULE: Segment.STABLE,
    BlockKind.SKILL_INDEX: Segment.SEMI_STABLE,
    BlockKind.SKILL_BODY: Segment.SEMI_STABLE,
    BlockKind.TASK_FRAME: Segment.SEMI_STABLE,
    BlockKind.LOAD_BEARING: Segment.SEMI_STABLE,
    BlockKind.HANDOFF_NOTE: Segment.SEMI_STABLE,
    BlockKind.SUMMARY: Segment.SUMMARIES,
    BlockKind.MEMORY: Segment.EVIDENCE,
    BlockKind.RETRIEVED: Segment.EVIDENCE,
    BlockKind.TOOL_CALL: Segment.RECENT,
    BlockKind.TOOL_RESULT: Segment.RECENT,
    BlockKind.TURN: Segment.RECENT,
    BlockKind.CURRENT_ASK: Segment.ASK,
}


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


# Keys of ``Block.meta`` the compiler reads (meta is never rendered).
CAPPED_META = "capped"  # a tool result shortened when recorded (``wakeful.tool_results``)
CLEARED_META = "cleared"  # a tool result cleared by ``clearing.py``: the ledger names it
CLEARED_END_META = "cleared_end"  # the cleared result a ``cleared`` breakpoint goes after
STALE_META = "stale"  # a paired tool result past its stale_after: ``live_output.py``
REPEATED_META = "repeated"  # a tool result whose call was made again later: likewise
ASKS_META = "resolved_after_asks"  # resolved after N later asks: likewise
FIXED_META = "error_resolved"  # a failed result a later equal call made good: likewise
OVER_CAP_META = "over_cap"  # a result over eviction.tool_output_max_tokens: likewise
# A wake's recorded evidence: the ids of the blocks it holds, space-separated (``evidence.py``).
EVIDENCE_META = "evidence"
ON_DEMAND_META = "on_demand"  # a tool schema sent only while a shortened result needs it


def content_hash(text: str, *extra: str) -> str:
    """Stable content hash (blake2b, 16 bytes hex). Never Python's ``hash()``."""
    h = hashlib.blake2b(digest_size=16)
    h.update(text.encode("utf-8"))
    for part in extra:
        h.update(b"\x00")
        h.update(part.encode("utf-8"))
    return h.hexdigest()


class Block(BaseModel):
    """One candidate piece of context.

    ``id`` is unique within a snapshot and stable across compiles (it is derived from the
    substrate row, never from a counter). ``seq`` orders blocks of the event log; blocks that
    are not events (rules, tools, memories) use their own stable ``seq`` too, so that every
    ordering the compiler makes can break ties on ``(seq, id)`` deterministically.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: BlockKind
    text: str
    source: str = Field(description="Provenance: where the block came from (table:id, url, tool).")
    seq: int = 0
    stability: Stability | None = Field(
        default=None, description="Defaults from the kind when not given."
    )
    role: Role | None = Field(default=None, description="For turns and tool traffic.")
    tool_call_id: str | None = Field(
        default=None, description="Pairs a TOOL_CALL with its TOOL_RESULT; never split."
    )
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = Field(
        default=None, description="TOOL_CALL arguments; TOOL_SCHEMA input JSON schema."
    )
    is_error: bool = False
    captured_at: datetime | None = None
    stale_after: datetime | None = None
    supersession_key: str | None = Field(
        default=None, description="Blocks sharing a key describe the same thing; freshest wins."
    )
    authoritative: bool = Field(
        default=False, description="Wins a supersession tie (e.g. a fresh repo read)."
    )
    resolved: bool = Field(
        default=False, description="A tool output whose matter is settled; may be collapsed."
    )
    relevance: float = 0.0
    importance: float = 0.5
    load_bearing: bool = False
    optional: bool = Field(default=False, description="Examples and extras; evicted early.")
    session_id: str | None = None
    wake_id: str | None = None
    external_id: str | None = Field(default=None, description="e.g. a LoCoMo dia_id.")
    meta: dict[str, str] = Field(default_factory=dict)

    @field_validator("captured_at", "stale_after")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("datetimes must be timezone-aware (UTC)")
        return value

    @property
    def effective_stability(self) -> Stability:
        if self.stability is not None:
            return self.stability
        seg = KIND_SEGMENT[self.kind]
        if seg is Segment.STABLE:
            return Stability.STABLE
        if seg in (Segment.SEMI_STABLE, Segment.SUMMARIES):
            return Stability.SEMI_STABLE
        if seg is Segment.ASK:
            return Stability.TAIL
        return Stability.DYNAMIC

    @property
    def segment(self) -> Segment:
        return KIND_SEGMENT[self.kind]

    @property
    def hash(self) -> str:
        """Hash of everything that reaches the rendered request."""
        extra = [self.kind.value, self.role.value if self.role else "", self.tool_call_id or ""]
        extra.append(self.tool_name or "")
        if self.tool_input is not None:
            extra.append(recorded_json(self.tool_input, compact=True))
        extra.append("E" if self.is_error else "")
        return content_hash(self.text, *extra)


class GoalKind(StrEnum):
    MESSAGE = "message"
    WEBHOOK = "webhook"
    SCHEDULE = "schedule"
    CHILD_TASK = "child_task"
    CONTINUATION = "continuation"


class Goal(BaseModel):
    """What woke the agent now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: GoalKind
    text: str
    intents: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    task_class: str | None = None
    idempotency_key: str | None = None


class AgentProfile(BaseModel):
    """The stable identity of an agent: what goes into the stable prefix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str
    name: str
    model: str
    provider: str = "anthropic"
    instructions: str
    tool_choice: Literal["any"] | None = Field(
        None,
        description="'any': every reply must call a tool (an agent with a typed output ends "
        "its wake by calling the output tool). None: the model chooses.",
    )


class Snapshot(BaseModel):
    """Everything the compiler may use for one call, as of one point in time.

    ``blocks`` are candidates: the compiler may drop, collapse or reorder them. The snapshot
    is complete on its own, so a stored snapshot recompiles byte-for-byte.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: AgentProfile
    as_of: datetime
    session_id: str | None = None
    current_wake_id: str | None = Field(
        default=None,
        description="Blocks of this wake (its ask and tool traffic so far) are the tail.",
    )
    blocks: tuple[Block, ...]
