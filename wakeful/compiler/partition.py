"""The partition: what a compile derives from the snapshot alone, kept from one compile to
the next so that the next one redoes only what changed.

select, dedupe, collapse and rank decide things that depend on the blocks, the current
wake, the trigger outcome and the policy — never on ``now`` or the budget. Each decision
belongs to a small group: a tool-call id (``select.pair_group``), a text or a supersession
key (``dedupe``), a unit (a pair or a lone block: its collapse, pair key and keep-order
entry). :func:`update` compares the new snapshot's facts with the previous ones
(``membership.py``), takes the blocks that left or arrived — or whose trigger outcome or
wake membership changed — out of and into their groups, and redoes only those groups and
the units they touch (``units.py``). A new snapshot is thus an incremental compile of the
last one, and the result is by construction the one a cold compile computes: a cold
compile is the same code with every block arriving at once.

Decisions are keyed by the :class:`Facts` object, not by position. Position matters only
where the pass order shows in the output (which of several calls with one id is first,
the order of tangled supersession groups, which of two stale halves is named); those rare
paths ask for :meth:`Partition.position`. When the relative order of blocks kept from the previous
snapshot changed, the partition is rebuilt.

The state itself (:class:`Partition`, with the questions passes ask of it) is in
``state.py``, below the passes; this module drives them over it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wakeful.compiler.dedupe import key_group, tangled_groups, text_group
from wakeful.compiler.facts import SUPERSEDES, Exclusion, Facts
from wakeful.compiler.membership import join, leave, members
from wakeful.compiler.policy import WindowPolicy
from wakeful.compiler.positions import Edit
from wakeful.compiler.select import in_tail, pair_group
from wakeful.compiler.state import Partition, registered
from wakeful.compiler.tokens import TokenCounter
from wakeful.compiler.units import refresh

__all__ = ["Partition", "get_partition", "settle", "update"]


def update(
    part: Partition,
    snap: list[Facts],
    synth: list[Facts],
    current: str | None,
    triggers: Callable[[Partition], dict[Facts, Exclusion]],
    edit: Edit | None = None,
) -> None:
    """Bring ``part`` to a new snapshot; ``triggers`` gives its gated blocks. ``edit``, when
    known, says how ``snap`` was edited from a list (``positions.Edit``); it only saves
    work.

    On any exception the partition is inconsistent and must be dropped.
    """
    arrived: dict[Facts, None] = {}
    if not (snap is part.snap or snap == part.snap) or synth != part.synth:
        arrived = members(part, snap, synth, edit)
        part.steady = 0
    else:
        part.steady += 1
    e0 = triggers(part)
    changed: dict[Facts, None] = {}
    if current != part.current:
        for wake in (part.current, current):
            if wake is not None:
                changed.update(part.by_wake.get(wake, {}))
    if e0 != part.e0:
        for f in (*part.e0, *e0):
            if part.e0.get(f) != e0.get(f):
                changed[f] = None
    moving = [f for f in changed if f not in arrived]
    for f in moving:
        leave(part, f)
    part.e0 = e0
    part.current = current
    for f in moving:
        join(part, f)
    for f in arrived:
        join(part, f)
    settle(part)


def settle(part: Partition) -> None:
    """Redo the dirty groups in pass order, then the units they touched."""
    for pair in part.dirty_pairs:
        pair_group(part, pair)
    wake_members, tail, partner = part.wake_members, part.tail, part.partner
    for f in list(part.units):
        other = partner.get(f)
        if f.wake is None and (other is None or other.wake is None):
            member = is_tail = False  # no wake at all: the common case, decided here
        else:
            member, is_tail = in_tail(part, f)
        if member != (f in wake_members):
            if member:
                wake_members[f] = None
            else:
                del wake_members[f]
        if is_tail != (f in tail):
            if is_tail:
                tail[f] = None
            else:
                del tail[f]
            if f.flags & SUPERSEDES and registered(part, f):
                part.dirty_keys[f.block.supersession_key] = None  # type: ignore[index]
    for text in part.dirty_texts:
        text_group(part, text)
    for key in part.dirty_keys:
        key_group(part, key)
    if part.tangled_dirty:
        tangled_groups(part)
    refresh(part)
    part.clear_dirty()


def get_partition(
    table: Any, tenant: str, agent: str, policy: WindowPolicy, counter: TokenCounter
) -> Partition:
    """The agent's partition in a facts table, rebuilt when policy parameters changed."""
    parts: dict[tuple[str, str], Partition] = table.partitions
    part = parts.get((tenant, agent))
    if part is None or part.params != (policy.eviction, bool(policy.staleness.max_age_hours)):
        if len(parts) >= 64:
            # Listed first: compiles of other agents may change the dict meanwhile.
            parts.pop(next(iter(list(parts))), None)
        part = parts[(tenant, agent)] = Partition(policy, counter)
    part.counter = counter
    part.work = table.work
    return part
