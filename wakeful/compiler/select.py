"""Pass 2 — select: split the snapshot into the current wake (tail) and the candidate pool.

The tail is the current wake's conversation (turns and tool traffic whose ``wake_id`` is the
snapshot's ``current_wake_id``); it is never evicted. Everything else is a candidate. Tool
calls and results are paired by ``tool_call_id`` and from here on travel as one unit headed
by the call: a pair is kept, collapsed or dropped whole. A half without its other half can
never be rendered validly, so it is excluded (reason ``orphan_tool_call`` /
``orphan_tool_result``) — even in the tail, where protocol validity outranks "never evict".
If the tail is empty, or would end on the assistant's turn, the goal becomes a synthetic
``current_ask`` so the request always ends with the user.

This pass also collects, in one sweep, the small index lists later passes need (dedupe
candidates, supersession keys, staleness checks, resolved tool output), so no other pass
has to walk every block.
"""

from __future__ import annotations

from wakeful.compiler.blocks import Block, BlockKind, Role, Segment
from wakeful.compiler.framing import wake_text
from wakeful.compiler.work import (
    CAPTURED,
    DEDUPE,
    LOAD_BEARING,
    PAIRED,
    RESOLVED,
    SPECIAL,
    STALE_AFTER,
    SUPERSEDES,
    Exclusion,
    Work,
)
from wakeful.errors import UserError

_NO_WAKE = object()  # matches no block's wake_id when the snapshot has no current wake


def role_of(block: Block) -> Role:
    if block.kind is BlockKind.TOOL_CALL:
        return Role.ASSISTANT
    if block.kind in (BlockKind.TOOL_RESULT, BlockKind.CURRENT_ASK):
        return Role.USER
    return block.role or Role.USER


def check_unique_ids(work: Work) -> None:
    if len({f.id for f in work.facts}) != len(work.facts):
        ids = [f.id for f in work.facts]
        seen: set[str] = set()
        dupes = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        raise UserError(
            f"block ids must be unique within a snapshot; repeated: {', '.join(dupes[:10])}"
        )


def select(work: Work) -> None:
    facts = work.facts
    current: object = work.snapshot.current_wake_id
    excluded = work.excluded
    max_age = bool(work.policy.staleness.max_age_hours)
    tail: list[int] = []
    pools: dict[Segment, list[int]] = {seg: [] for seg in Segment if seg is not Segment.ASK}
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    dedupe: list[int] = []
    supersedes: list[int] = []
    freshness: list[int] = []
    resolved: list[int] = []
    fresh_mask = STALE_AFTER | (CAPTURED if max_age else 0)
    special = SPECIAL | fresh_mask
    if current is None:
        current = _NO_WAKE
    for idx, f in enumerate(facts):
        if excluded and idx in excluded:
            continue
        flags = f.flags
        in_tail = f.wake == current
        if not flags & special:
            if in_tail:
                tail.append(idx)
            else:
                pools[f.segment].append(idx)
            continue
        if flags & PAIRED:
            is_call = f.kind_s == "tool_call"
            table = calls if is_call else results
            if f.pair in table:
                work.exclude(idx, Exclusion("duplicate_tool_id", "select", f"{f.pair}"))
                continue
            table[f.pair] = idx  # type: ignore[index]
            if in_tail:
                tail.append(idx)
            elif is_call:
                pools[f.segment].append(idx)
        elif in_tail:
            tail.append(idx)
        elif flags & LOAD_BEARING:
            work.mandatory.append(idx)
        else:
            pools[f.segment].append(idx)
        if flags & DEDUPE:
            dedupe.append(idx)
        if flags & SUPERSEDES:
            supersedes.append(idx)
        if flags & fresh_mask:
            freshness.append(idx)
        if flags & RESOLVED:
            resolved.append(idx)
    work.tail_seq = max((facts[i].seq for i in tail), default=0)
    work.lists = {
        "dedupe": dedupe,
        "supersedes": supersedes,
        "freshness": freshness,
        "resolved": resolved,
    }
    work.tail = tail
    work.pools = pools
    _pair(work, calls, results)
    _ensure_ask(work)


def _pair(work: Work, calls: dict[str, int], results: dict[str, int]) -> None:
    tail_set = set(work.tail)
    for call_id, call in calls.items():
        result = results.get(call_id)
        if result is None:
            work.exclude(call, Exclusion("orphan_tool_call", "select", f"no result for {call_id}"))
            continue
        work.partner[call] = result
        work.partner[result] = call
        if (call in tail_set) != (result in tail_set):
            # One half belongs to the current wake: the pair moves into the tail together.
            if call in tail_set:
                work.tail.append(result)
            else:
                work.pools[work.facts[call].segment].remove(call)
                work.tail.append(call)
    for call_id, result in results.items():
        if call_id not in calls:
            work.exclude(result, Exclusion("orphan_tool_result", "select", f"no call {call_id}"))


def _ensure_ask(work: Work) -> None:
    excluded = work.excluded
    work.tail = [i for i in work.tail if i not in excluded]
    facts = work.facts
    last = max(work.tail, key=lambda i: (facts[i].seq, facts[i].id), default=None)
    if last is not None and role_of(facts[last].block) is Role.USER:
        return
    current = work.snapshot.current_wake_id
    ask = Block(
        id=f"ask:{current}" if current is not None else "ask:goal",
        kind=BlockKind.CURRENT_ASK,
        text=wake_text(work.goal),
        source=f"goal:{work.goal.kind.value}",
        role=Role.USER,
        seq=work.tail_seq + 1,
        wake_id=current,
    )
    work.tail.append(work.add_synthetic(ask))
