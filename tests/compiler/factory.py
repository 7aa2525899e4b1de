"""Builders of small, readable snapshots for the compiler tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from wakeful.compiler import AgentProfile, Block, BlockKind, Goal, GoalKind, Role, Snapshot

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
AGENT = AgentProfile(
    tenant="acme", name="triage", model="claude-sonnet-4-5", instructions="You triage incidents."
)
WAKE = "wake-7"


def block(id: str, kind: BlockKind, text: str | None = None, **kw: Any) -> Block:
    kw.setdefault("source", f"test:{id}")
    return Block(id=id, kind=kind, text=text if text is not None else f"text of {id}", **kw)


def turn(id: str, seq: int, role: Role = Role.USER, text: str | None = None, **kw: Any) -> Block:
    return block(id, BlockKind.TURN, text, seq=seq, role=role, **kw)


def pair(call_id: str, seq: int, *, wake: str | None = None, **kw: Any) -> tuple[Block, Block]:
    call = block(
        f"{call_id}-call",
        BlockKind.TOOL_CALL,
        "",
        seq=seq,
        tool_call_id=call_id,
        tool_name="grep",
        tool_input={"q": call_id},
        wake_id=wake,
    )
    result = block(
        f"{call_id}-result",
        BlockKind.TOOL_RESULT,
        f"output of {call_id}",
        seq=seq + 1,
        tool_call_id=call_id,
        tool_name="grep",
        wake_id=wake,
        **kw,
    )
    return call, result


def base_blocks() -> list[Block]:
    """A small but complete history: every segment populated."""
    blocks = [
        block(
            "tool-grep",
            BlockKind.TOOL_SCHEMA,
            "Search files.",
            tool_name="grep",
            tool_input={"type": "object", "properties": {"q": {"type": "string"}}},
        ),
        block("rule-1", BlockKind.SYSTEM_RULE, "Never page a human before 08:00.", seq=1),
        block("skills", BlockKind.SKILL_INDEX, "- deploy\n- rollback", seq=2),
        block("frame", BlockKind.TASK_FRAME, "Keep the checkout service healthy.", seq=3),
        block(
            "dec-1",
            BlockKind.LOAD_BEARING,
            "D-1: we never roll back migrations.",
            seq=4,
            load_bearing=True,
        ),
        block("handoff", BlockKind.HANDOFF_NOTE, "Yesterday: disk alarms on db-2.", seq=5),
        block("sum-1", BlockKind.SUMMARY, "Week 1: three incidents, all disk.", seq=6),
        block(
            "mem-1",
            BlockKind.MEMORY,
            "db-2 disks are 2 TB.",
            seq=7,
            relevance=0.9,
            captured_at=NOW - timedelta(days=2),
        ),
        block("ret-1", BlockKind.RETRIEVED, "Runbook: rotate logs.", seq=8, relevance=0.5),
        turn("t-10", 10, text="Is db-2 healthy?"),
        turn("t-11", 11, Role.ASSISTANT, text="Checking."),
        *pair("c-12", 12),
        turn("t-14", 14, Role.ASSISTANT, text="db-2 is fine."),
        turn("ask", 20, text="Disk alarm fired on db-2 again.", wake_id=WAKE),
    ]
    return blocks


def snapshot(blocks: list[Block] | None = None, wake: str | None = WAKE, **kw: Any) -> Snapshot:
    kw.setdefault("agent", AGENT)
    return Snapshot(
        as_of=NOW,
        current_wake_id=wake,
        blocks=tuple(base_blocks() if blocks is None else blocks),
        **kw,
    )


def goal(text: str = "Disk alarm fired on db-2 again.", **kw: Any) -> Goal:
    return Goal(kind=kw.pop("kind", GoalKind.WEBHOOK), text=text, **kw)
