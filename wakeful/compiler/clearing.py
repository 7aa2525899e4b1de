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
result is cleared when it ends at or before the **boundary**. The boundary is replayed
from the ends of the history's wakes: it starts at 0, and once a wake's end lies
``step = clear_tool_output_at - clear_tool_output_keep`` past it plus
``clear_tool_output_keep`` (and at least ``clear_tool_output_at`` from the start), it moves
to that end minus ``clear_tool_output_keep``. The newest ``clear_tool_output_keep`` tokens
thus always keep their output; each move rewrites the cache from the first newly cleared
result once, and every call until the next move reads it. A move goes as far as it can
rather than to a multiple of ``step``: the output left whole after a step is read on every
call until the next one, and the rewrite that a step costs covers it either way
(``wakeful bench cache`` compares the two).

That needs a cache entry where the cleared part ends: the provider looks back only ~20
content blocks from a breakpoint, and the history's breakpoints sit far after it. So the
last cleared result carries :data:`CLEARED_END_META` and the renderer puts a ``cleared``
breakpoint after it; every call refreshes that entry for free (it lies inside what the call
reads). On the wake whose history moved the boundary, the mark stays where the previous
boundary put it — the entry the calls before wrote — so the step reads everything up to
there and writes only what changed; the next wake's calls mark the new end. Both ends follow
from the snapshot alone: the previous boundary is this one's history without its newest wake.

The tool schemas a snapshot marks :data:`ON_DEMAND_META` (the built-in ``read_result``) are
sent only while a result shortened when it was recorded (``CAPPED_META``) is in the
snapshot, so an agent pays for them only when they can help.
"""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.compiler.blocks import (
    CAPPED_META,
    CLEARED_END_META,
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
    "CLEARED_END_META",
    "CLEARED_META",
    "ON_DEMAND_META",
    "clear_tool_output",
    "clearing_boundary",
]


def _history(snap: Sequence[Facts], current: str | None) -> list[tuple[int, Facts]]:
    """The history's facts (``recent``, outside the current wake) with their indexes."""
    return [
        (n, f)
        for n, f in enumerate(snap)
        if f.segment is Segment.RECENT and (f.wake is None or f.wake != current)
    ]


def _boundary(history: Sequence[tuple[int, Facts]], eviction: Eviction) -> int:
    """Where clearing ends for this history (see the module docstring)."""
    at, keep = eviction.clear_tool_output_at, eviction.clear_tool_output_keep
    if at <= 0 or not eviction.collapse_resolved:
        return 0
    step = at - keep
    boundary = 0
    for end in _wake_ends(history):
        if end >= at and end - keep >= boundary + step:
            boundary = end - keep
    return boundary


def _wake_ends(history: Sequence[tuple[int, Facts]]) -> list[int]:
    """Where each wake of the history ends (tokens from its start), in order."""
    ends: list[int] = []
    position, wake = 0, None
    for n, (_, f) in enumerate(history):
        if n and f.wake != wake:
            ends.append(position)
        wake = f.wake
        position += f.tokens
    if history:
        ends.append(position)
    return ends


def clearing_boundary(snap: Sequence[Facts], current: str | None, eviction: Eviction) -> int:
    """The history position (tokens from its start) up to which tool output is cleared;
    0 when the history is below the threshold or clearing is off."""
    return _boundary(_history(snap, current), eviction)


def _previous_boundary(history: list[tuple[int, Facts]], eviction: Eviction) -> int:
    """The boundary of the previous wake's history: this one without its newest wake."""
    newest = next((f.wake for _, f in reversed(history) if f.wake is not None), None)
    if newest is None:
        return _boundary(history, eviction)
    return _boundary([(n, f) for n, f in history if f.wake != newest], eviction)


def clear_tool_output(snapshot: Snapshot, snap: Sequence[Facts], eviction: Eviction) -> Snapshot:
    """The snapshot with its old tool output cleared and its unneeded on-demand tools
    left out; the very same object when neither applies."""
    blocks = snapshot.blocks
    history = _history(snap, snapshot.current_wake_id)
    boundary = _boundary(history, eviction)
    cleared: dict[int, Block] = {}
    if boundary:
        # The end to mark: the previous boundary's on the wake that moved it (see above).
        marked = min(boundary, _previous_boundary(history, eviction) or boundary)
        position = 0
        last = -1
        for n, f in history:
            position += f.tokens
            if position > boundary:
                break
            block = f.block
            if block.kind is BlockKind.TOOL_RESULT and not block.resolved:
                meta = {**blocks[n].meta, CLEARED_META: "1"}
                cleared[n] = blocks[n].model_copy(update={"resolved": True, "meta": meta})
                if position <= marked:
                    last = n
        if last >= 0:
            mark = {**cleared[last].meta, CLEARED_END_META: "1"}
            cleared[last] = cleared[last].model_copy(update={"meta": mark})
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
