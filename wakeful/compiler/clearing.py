"""Clearing old tool output: the history's tool results give way in large, rare steps.

A tool-heavy session grows by tool output, most of it read once (a file, a search, a log)
and never needed whole again. Sent on every later call it is read from the prompt cache
each time; past some size that costs more than writing a shorter window once. So when the
history before the current wake reaches ``eviction.clear_tool_output_at`` tokens, the
results of its earlier wakes are **cleared**: marked resolved, they reach the collapse pass
(``collapse.py``), which shows a one-line note in their place — the tool, the size, the
first line, and that the tool can be called again. The call stays as it was, so the pair
stays valid and the model's own turn is unchanged. (No tool is added for reading cleared
output back: a tool schema joining the window would rewrite the whole cache.)

Which results are cleared follows from the snapshot alone, and changes rarely: positions
count the tokens of the history's blocks from its start (as ``history.py`` does), and a
result is cleared when it ends at or before the **boundary**, the largest multiple of
``step = clear_tool_output_at - clear_tool_output_keep`` at most ``history -
clear_tool_output_keep``. The newest ``clear_tool_output_keep`` tokens thus always keep
their output, and the boundary moves one step at a time: each move rewrites the cache from
the first newly cleared result once, and every call until the next move reads it.

The tool schemas a snapshot marks :data:`ON_DEMAND_META` (the built-in ``read_result``) are
sent only while a result shortened when it was recorded (``CAPPED_META``) is in the
snapshot, so an agent pays for them only when they can help.
"""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.compiler.blocks import (
    CAPPED_META,
    CLEARED_META,
    ON_DEMAND_META,
    Block,
    BlockKind,
    Segment,
    Snapshot,
)
from wakeful.compiler.facts import Facts
from wakeful.compiler.policy import Eviction

__all__ = [
    "CAPPED_META",
    "CLEARED_META",
    "ON_DEMAND_META",
    "clear_tool_output",
    "clearing_boundary",
]


def clearing_boundary(snap: Sequence[Facts], current: str | None, eviction: Eviction) -> int:
    """The history position (tokens from its start) up to which tool output is cleared;
    0 when the history is below the threshold or clearing is off."""
    at, keep = eviction.clear_tool_output_at, eviction.clear_tool_output_keep
    if at <= 0 or not eviction.collapse_resolved:
        return 0
    history = sum(
        f.tokens
        for f in snap
        if f.segment is Segment.RECENT and (f.wake is None or f.wake != current)
    )
    if history < at:
        return 0
    step = at - keep
    return (history - keep) // step * step


def clear_tool_output(snapshot: Snapshot, snap: Sequence[Facts], eviction: Eviction) -> Snapshot:
    """The snapshot with its old tool output cleared and its unneeded on-demand tools
    left out; the very same object when neither applies."""
    blocks = snapshot.blocks
    current = snapshot.current_wake_id
    boundary = clearing_boundary(snap, current, eviction)
    cleared: dict[int, Block] = {}
    if boundary:
        position = 0
        for n, f in enumerate(snap):
            if f.segment is not Segment.RECENT or (f.wake is not None and f.wake == current):
                continue
            position += f.tokens
            if position > boundary:
                break
            block = f.block
            if block.kind is BlockKind.TOOL_RESULT and not block.resolved:
                cleared[n] = blocks[n].model_copy(
                    update={"resolved": True, "meta": {**blocks[n].meta, CLEARED_META: "1"}}
                )
    reading = any(CAPPED_META in b.meta for b in blocks)
    on_demand = not reading and any(
        b.kind is BlockKind.TOOL_SCHEMA and ON_DEMAND_META in b.meta for b in blocks
    )
    if not cleared and not on_demand:
        return snapshot
    kept = tuple(
        cleared.get(n, b)
        for n, b in enumerate(blocks)
        if reading or not (b.kind is BlockKind.TOOL_SCHEMA and ON_DEMAND_META in b.meta)
    )
    return snapshot.model_copy(update={"blocks": kept})
