"""The synthetic histories ``wakeful bench compile`` compiles (see ``compile_bench``).

A deterministic mix of kinds (turns, tool pairs, memories, retrieved chunks, summaries,
rules, tools, decisions), ~2 KB of text each, ending in a live wake; and the same blocks
built again the way the compile activity builds them from loaded rows.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from wakeful.compiler import (
    AgentProfile,
    Allocations,
    Block,
    BlockKind,
    Budget,
    Role,
    Snapshot,
    WindowPolicy,
)

SIZES = (1_000, 10_000, 100_000)
WINDOW = 50_000
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
WAKE = "wake-bench"
AGENT = AgentProfile(
    tenant="bench",
    name="synthetic",
    model="claude-sonnet-4-5",
    instructions="You keep a fleet of services healthy. Be brief and precise.",
)
_WORDS = (
    "disk latency deploy rollback error warning service checkout payment queue retry "
    "timeout config migration index replica primary shard cache eviction alert page "
    "owner runbook metric p99 budget window token summary decision incident"
).split()


def _corpus(rnd: random.Random) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(60_000))


def history(n: int, seed: int = 7) -> list[Block]:
    """A deterministic mixed history of ``n`` blocks, ~2 KB each, ending in a live wake."""
    rnd = random.Random(seed)
    corpus = _corpus(rnd)

    def text(i: int, size: int = 2000) -> str:
        start = (i * 7919) % (len(corpus) - size)
        return f"[{i}] " + corpus[start : start + size]

    def at(seq: int) -> datetime:
        return NOW - timedelta(minutes=(n - seq))

    blocks: list[Block] = [
        Block(
            id=f"tool-{k}",
            kind=BlockKind.TOOL_SCHEMA,
            text=f"Tool {k}: " + text(k, 300),
            source="registry",
            seq=k,
            tool_name=f"tool_{k}",
            tool_input={"type": "object", "properties": {"q": {"type": "string"}}},
        )
        for k in range(8)
    ]
    blocks += [
        Block(
            id=f"rule-{k}",
            kind=BlockKind.SYSTEM_RULE,
            text=text(100 + k, 400),
            source="org",
            seq=10 + k,
        )
        for k in range(6)
    ]
    blocks += [
        Block(
            id="skills", kind=BlockKind.SKILL_INDEX, text=text(200, 800), source="skills", seq=20
        ),
        Block(id="frame", kind=BlockKind.TASK_FRAME, text=text(201, 600), source="task", seq=21),
        Block(
            id="handoff",
            kind=BlockKind.HANDOFF_NOTE,
            text=text(202, 1200),
            source="handoff",
            seq=22,
        ),
    ]
    blocks += [
        Block(
            id=f"D-{k}",
            kind=BlockKind.LOAD_BEARING,
            text=text(300 + k, 300),
            source="registry",
            seq=30 + k,
            load_bearing=True,
        )
        for k in range(3)
    ]
    seq = 100
    while len(blocks) < n - 5:
        roll = rnd.random()
        if roll < 0.40:
            role = Role.USER if seq % 2 else Role.ASSISTANT
            blocks.append(
                Block(
                    id=f"t-{seq}",
                    kind=BlockKind.TURN,
                    text=text(seq),
                    source="chat",
                    seq=seq,
                    role=role,
                    importance=rnd.random(),
                )
            )
        elif roll < 0.70:
            call_id = f"call-{seq}"
            blocks.append(
                Block(
                    id=f"{call_id}-u",
                    kind=BlockKind.TOOL_CALL,
                    text="",
                    source="model",
                    seq=seq,
                    tool_call_id=call_id,
                    tool_name="tool_1",
                    tool_input={"q": f"query {seq}"},
                )
            )
            seq += 1
            blocks.append(
                Block(
                    id=f"{call_id}-r",
                    kind=BlockKind.TOOL_RESULT,
                    text=text(seq),
                    source="tool_1",
                    seq=seq,
                    tool_call_id=call_id,
                    tool_name="tool_1",
                    resolved=rnd.random() < 0.5,
                    captured_at=at(seq),
                )
            )
        elif roll < 0.85:
            blocks.append(
                Block(
                    id=f"m-{seq}",
                    kind=BlockKind.MEMORY,
                    text=text(seq),
                    source="memory",
                    seq=seq,
                    relevance=rnd.random(),
                    importance=rnd.random(),
                    captured_at=at(seq),
                    stale_after=at(seq) + timedelta(days=1) if seq % 5 == 0 else None,
                    supersession_key=f"fact-{seq % 500}" if seq % 3 == 0 else None,
                )
            )
        elif roll < 0.97:
            blocks.append(
                Block(
                    id=f"r-{seq}",
                    kind=BlockKind.RETRIEVED,
                    text=text(seq),
                    source=f"doc:{seq % 97}",
                    seq=seq,
                    relevance=rnd.random(),
                    captured_at=at(seq),
                    supersession_key=f"chunk-{seq % 300}" if seq % 4 == 0 else None,
                )
            )
        else:
            blocks.append(
                Block(
                    id=f"s-{seq}",
                    kind=BlockKind.SUMMARY,
                    text=text(seq),
                    source="consolidation",
                    seq=seq,
                )
            )
        seq += 1
    blocks.append(
        Block(
            id="ask",
            kind=BlockKind.TURN,
            text="The disk alarm fired again on db-2.",
            source="webhook",
            seq=seq,
            role=Role.USER,
            wake_id=WAKE,
        )
    )
    for k in range(2):
        call_id = f"live-{k}"
        blocks.append(
            Block(
                id=f"{call_id}-u",
                kind=BlockKind.TOOL_CALL,
                text="",
                source="model",
                seq=seq + 1 + 2 * k,
                tool_call_id=call_id,
                tool_name="tool_2",
                tool_input={"host": "db-2"},
                wake_id=WAKE,
            )
        )
        blocks.append(
            Block(
                id=f"{call_id}-r",
                kind=BlockKind.TOOL_RESULT,
                text=text(seq + k),
                source="tool_2",
                seq=seq + 2 + 2 * k,
                tool_call_id=call_id,
                tool_name="tool_2",
                wake_id=WAKE,
            )
        )
    return blocks


def bench_policy() -> WindowPolicy:
    return WindowPolicy(
        budget=Budget(context_limit=WINDOW, output_reserve=4_096, allocations=Allocations())
    )


def snapshot_of(blocks: list[Block] | tuple[Block, ...]) -> Snapshot:
    # The blocks were validated when built; re-validating 100k of them is not what we measure.
    return Snapshot.model_construct(
        agent=AGENT, as_of=NOW, session_id=None, current_wake_id=WAKE, blocks=tuple(blocks)
    )


def reloaded(blocks: list[Block] | tuple[Block, ...]) -> tuple[Block, ...]:
    """New, equal blocks built the way the compile activity builds them from rows: fresh
    strings (decoded, as a driver does), dicts and datetimes, validated by pydantic."""
    out = []
    for block in blocks:
        fields: dict[str, Any] = {}
        for name, value in block.__dict__.items():
            if type(value) is str:
                value = value.encode().decode()
            elif isinstance(value, datetime):
                value = value.replace()
            elif isinstance(value, dict):
                value = json.loads(json.dumps(value))
            fields[name] = value
        out.append(Block(**fields))
    return tuple(out)
