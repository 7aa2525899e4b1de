"""Pass 5 — collapse resolved tool output to a one-line note.

A tool result whose matter is settled (``resolved``) rarely needs its full text again, but
its call and result must stay a valid pair, so the result's text is replaced by a note
(tool name, original size, first line) and the call is left as it was. The current wake is
never collapsed. Collapsed pairs are the second class to go under pressure (DESIGN.md).

A collapse depends only on its unit (the pair, or a stand-alone result), so the partition
decides it when the unit changes. A unit excluded later in the compile (stale) is simply
never placed, so deciding before freshness changes nothing visible.
"""

from __future__ import annotations

from wakeful.compiler.blocks import FIXED_META, STALE_META
from wakeful.compiler.facts import BLOCK_OVERHEAD, RESOLVED, Facts
from wakeful.compiler.framing import collapsed_note
from wakeful.compiler.state import Partition, registered


def note_of(part: Partition, result: Facts) -> tuple[str, int]:
    """The collapsed note of a result and its cost (memoised on the facts)."""
    chars = part.eviction.note_chars
    memo = result.note
    if memo is None or memo[0] != chars:
        note = collapsed_note(result.block, result.tokens, chars)
        memo = result.note = (chars, note, part.counter.count(note) + BLOCK_OVERHEAD)
    return memo[1], memo[2]


def collapse_unit(part: Partition, head: Facts, other: Facts | None) -> None:
    """Collapse (or un-collapse) the result of the unit headed by ``head``."""
    if other is not None:
        result: Facts | None = other
        members: tuple[Facts, ...] = (head, other)
    else:
        result = head if head.kind_s == "tool_result" else None
        members = (head,)
    qualifies = (
        result is not None
        and part.eviction.collapse_resolved
        and any(
            f.flags & RESOLVED
            and registered(part, f)
            and f not in part.excluded
            and f not in part.tail
            for f in members
        )
    )
    if qualifies and result is not None:
        note, tokens = note_of(part, result)
        # A stale result, or a failure since made good, goes even when its note is longer:
        # it is no longer true.
        meta = result.block.meta
        if tokens < result.tokens or STALE_META in meta or FIXED_META in meta:
            part.collapsed[result] = (note, tokens)
            part.resolved[head] = None
            return
    if result is not None:
        part.collapsed.pop(result, None)
    part.resolved.pop(head, None)
