"""Pass 2 — select: split the snapshot into the current wake (tail) and the candidate pool.

The tail is the current wake's conversation (turns and tool traffic whose ``wake_id`` is the
snapshot's ``current_wake_id``); it is never evicted. Everything else is a candidate. Tool
calls and results are paired by ``tool_call_id`` and from here on travel as one unit headed
by the call: a pair is kept, collapsed or dropped whole. Of several calls (or results) with
one id, the first in snapshot order counts and the others are excluded
(``duplicate_tool_id``). A half without its other half can never be rendered validly, so it
is excluded (reason ``orphan_tool_call`` / ``orphan_tool_result``) — even in the tail, where
protocol validity outranks "never evict". A pair with one half in the current wake moves
into the tail whole. If the tail is empty, or would end on the assistant's turn, the goal
becomes a synthetic ``current_ask`` so the request always ends with the user.

Each tool-call id is a group decided from its members alone, so the partition redoes only
the groups a new snapshot touched (:func:`pair_group`).
"""

from __future__ import annotations

from wakeful.compiler.blocks import Block, BlockKind, Role
from wakeful.compiler.facts import LOAD_BEARING, PAIRED, SUPERSEDES, Exclusion, Facts
from wakeful.compiler.framing import wake_text
from wakeful.compiler.state import DUPLICATE, Partition, registered
from wakeful.compiler.work import Work


def role_of(block: Block) -> Role:
    if block.kind is BlockKind.TOOL_CALL:
        return Role.ASSISTANT
    if block.kind in (BlockKind.TOOL_RESULT, BlockKind.CURRENT_ASK):
        return Role.USER
    return block.role or Role.USER


def pair_group(part: Partition, pair: str) -> None:
    """Decide one tool-call id: its unit (first call + first result), duplicates, orphans."""
    calls = part.calls.get(pair, [])
    results = part.results.get(pair, [])
    if len(calls) > 1:
        calls.sort(key=part.position().__getitem__)
    if len(results) > 1:
        results.sort(key=part.position().__getitem__)
    for f in (*calls, *results):
        part.sel.pop(f, None)
        other = part.partner.pop(f, None)
        if other is not None:
            part.partner.pop(other, None)
            part.touch(other)
        part.touch(f)
        if f.flags & SUPERSEDES:
            part.dirty_keys[f.block.supersession_key] = None  # type: ignore[index]
    dup = Exclusion(DUPLICATE, "select", pair)
    for f in calls[1:] + results[1:]:
        part.sel[f] = dup
    call = calls[0] if calls else None
    result = results[0] if results else None
    if call is not None and result is not None:
        part.partner[call] = result
        part.partner[result] = call
    elif call is not None:
        part.sel[call] = Exclusion("orphan_tool_call", "select", f"no result for {pair}")
    elif result is not None:
        part.sel[result] = Exclusion("orphan_tool_result", "select", f"no call {pair}")


def in_tail(part: Partition, f: Facts) -> tuple[bool, bool]:
    """(is a registered member of the current wake, is in the tail after pairing)."""
    current = part.current
    if current is None or not registered(part, f):
        return False, False
    member = f.wake == current
    why = part.sel.get(f)
    if why is not None:  # an orphan: counted for the ask's seq, never placed
        return member, False
    other = part.partner.get(f)
    return member, member or (other is not None and other.wake == current)


def pooled(part: Partition, f: Facts) -> bool:
    """A candidate unit head: registered, outside the tail, a call or a plain block."""
    if not registered(part, f) or f in part.tail:
        return False
    if f.flags & PAIRED:
        return f.is_call
    return not f.flags & LOAD_BEARING


def tail_of(work: Work) -> list[Facts]:
    """The current wake, plus a synthetic ask unless it already ends with the user."""
    part = work.part
    tail = list(part.tail)
    last = max(tail, key=lambda f: (f.seq, f.id), default=None)
    if last is not None and role_of(last.block) is Role.USER:
        return tail
    current = work.snapshot.current_wake_id
    tail_seq = max((f.seq for f in part.wake_members), default=0)
    ask = Block(
        id=f"ask:{current}" if current is not None else "ask:goal",
        kind=BlockKind.CURRENT_ASK,
        text=wake_text(work.goal),
        source=f"goal:{work.goal.kind.value}",
        role=Role.USER,
        seq=tail_seq + 1,
        wake_id=current,
    )
    tail.append(work.add_synthetic(ask))
    return tail


def tail_order(work: Work) -> list[Facts]:
    """The tail in the order the wake is reported in errors: wake members in snapshot order,
    then halves that joined with their pair (in their call's order), then the ask."""
    part = work.part
    pos = part.position()
    members = sorted((f for f in part.wake_members if f in part.tail), key=pos.__getitem__)
    joined = [f for f in part.tail if f not in part.wake_members]
    joined.sort(key=lambda f: pos[f if f.is_call else part.partner[f]])
    return members + joined + [f for f in work.tail if f not in part.tail]
