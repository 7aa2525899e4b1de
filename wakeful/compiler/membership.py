"""How a partition takes in a new snapshot: which blocks left, arrived or moved, and the
groups they leave and join (see ``partition.py``).

The common change is one stretch of blocks (a history grown by an event, trimmed at the
front, or one block replaced): :func:`one_edit` finds it by comparing both ends of the old
and new lists by identity, in C, and splices the base ledger rows to match. Anything else
takes the general path of set differences. Groups are left under the state a block joined
them with and joined under the new one; the partition then redoes the dirty groups.
"""

from __future__ import annotations

from itertools import filterfalse

from wakeful.compiler.facts import DEDUPE, PAIRED, SUPERSEDES, Facts, duplicate_ids_error
from wakeful.compiler.ledger import LedgerRow
from wakeful.compiler.lookup import common_facts_ends
from wakeful.compiler.positions import Edit
from wakeful.compiler.state import Partition


def members(
    part: Partition, snap: list[Facts], synth: list[Facts], edit: Edit | None = None
) -> dict[Facts, None]:
    """Apply the difference in blocks; returns the ones to (re)join their groups. ``edit``,
    when known, says how ``snap`` was edited from a list; it only saves work."""
    change = one_edit(part, snap, edit) if part.snap and synth == part.synth else None
    moved: list[Facts] = []
    if change is not None:
        gone, new, rows = change
    else:
        rows = None
        present = set(snap + synth)
        if len(present) != len(snap) + len(synth):
            raise duplicate_ids_error(snap)
        new = [f for f in (*snap, *synth) if f not in part.present]
        if len(present) - len(new) == len(part.present):
            gone = []  # every old block is still there
        else:
            gone = list(filterfalse(present.__contains__, part.facts))
        if len(gone) > len(present) // 2 or reordered(part, snap, present, gone, new):
            part.reset()  # mostly replaced, or reordered where order matters: start over
            gone, new = [], [*snap, *synth]
        elif synth != part.synth:
            moved = [f for f in part.synth if f in present]  # re-join, new tiebreaks
        part.present = present
    for f in gone:
        leave(part, f)
        forget(part, f)
    for f in moved:
        leave(part, f)
    part.facts = snap + synth
    part.snap = snap
    part.synth = synth
    part.edited = change is not None
    if change is None:
        part._pos = None  # (one_edit moved the positions it keeps)
    part._rows = rows
    for n, f in enumerate(synth, 1):
        part.tb[f] = n
    for f in new:
        if f not in part.tb:
            part.tb[f] = 0
            index(part, f)
    if len(part.by_id) != len(snap):
        raise duplicate_ids_error(snap)
    return dict.fromkeys([*new, *moved])


def one_edit(
    part: Partition, snap: list[Facts], edit: Edit | None = None
) -> tuple[list[Facts], list[Facts], list[LedgerRow] | None] | None:
    """The difference from the last snapshot when it lies in one stretch (a grown or
    trimmed history): found by comparing both ends by identity, in C, unless ``edit``
    says it from the very last snapshot. Returns the gone and new blocks and the base rows
    spliced to match, or None to take the general path.
    """
    old = part.snap
    if edit is not None and edit[0] is old:
        _, head, tail = edit
    else:
        head, tail = common_facts_ends(snap, old)
    if head + tail <= len(snap) // 2:
        return None
    old_mid, new_mid = old[head : len(old) - tail], snap[head : len(snap) - tail]
    old_set, new_set = set(old_mid), set(new_mid)
    present = part.present
    if len(new_set) != len(new_mid) or any(f in present and f not in old_set for f in new_mid):
        raise duplicate_ids_error(snap)
    if (part.multi or part.tangled) and [f for f in old_mid if f in new_set] != [
        f for f in new_mid if f in old_set
    ]:
        return None
    gone = [f for f in old_mid if f not in new_set]
    new = [f for f in new_mid if f not in old_set]
    present.difference_update(gone)
    present.update(new)
    rows = part._rows
    if rows is not None:  # the partition's own list, spliced in place: no copy of the rest
        rows[head : len(old) - tail] = [part.rows.get(f, f.row) for f in new_mid]
    pos = part._pos
    if pos is not None:  # moved like the rows: the stretch and what follows it
        for f in old_mid:
            del pos[f]
        pos.update(zip(new_mid, range(head, head + len(new_mid)), strict=True))
        shift = len(new_mid) - len(old_mid)
        if shift:
            after = [*snap[len(snap) - tail :], *part.synth]
            moved_to = range(len(snap) - tail, len(snap) + len(part.synth))
            pos.update(zip(after, moved_to, strict=True))
    return gone, new, rows


def reordered(
    part: Partition, snap: list[Facts], present: set[Facts], gone: list[Facts], new: list[Facts]
) -> bool:
    """Did blocks kept from the last snapshot change their relative order, in a
    partition where order shows (several calls with one id, tangled key groups)?"""
    if not part.multi and not part.tangled:
        return False
    old = list(filter(present.__contains__, part.snap)) if gone else part.snap
    kept = list(filter(part.present.__contains__, snap)) if new else snap
    return old != kept


def index(part: Partition, f: Facts) -> None:
    part.by_id[f.id] = f
    if f.key != f.key:
        part.nan_keys[f] = None
    key = f.block.supersession_key
    if key is not None:
        part.by_key.setdefault(key, {})[f] = None
    if f.wake is not None:
        part.by_wake.setdefault(f.wake, {})[f] = None


def forget(part: Partition, f: Facts) -> None:
    """Drop every trace of a block that left the snapshot."""
    if part.tb.pop(f, 1) == 0:
        if part.by_id.get(f.id) is f:
            del part.by_id[f.id]
        key = f.block.supersession_key
        if key is not None:
            part.by_key[key].pop(f, None)
            if not part.by_key[key]:
                del part.by_key[key]
        if f.wake is not None:
            part.by_wake[f.wake].pop(f, None)
            if not part.by_wake[f.wake]:
                del part.by_wake[f.wake]
    part.e0.pop(f, None)
    part.nan_keys.pop(f, None)


def leave(part: Partition, f: Facts) -> None:
    """Take a block out of every group it is in (by the state it joined under)."""
    part.touch(f)
    if f in part.e0:
        return
    flags = f.flags
    if flags & PAIRED:
        pair: str = f.pair  # type: ignore[assignment]
        _remove(part.calls if f.is_call else part.results, pair, f)
        part.dirty_pairs[pair] = None
        if len(part.calls.get(pair, ())) < 2 and len(part.results.get(pair, ())) < 2:
            part.multi.pop(pair, None)
        other = part.partner.pop(f, None)
        if other is not None:
            part.partner.pop(other, None)
            part.touch(other)
        part.sel.pop(f, None)
    if flags & DEDUPE:
        text = f.block.text
        if _remove(part.texts, text, f):
            part.dirty_texts[text] = None
        part.dd.pop(f, None)
    if flags & SUPERSEDES:
        key: str = f.block.supersession_key  # type: ignore[assignment]
        _remove(part.keys, key, f)
        part.dirty_keys[key] = None
        part.sup.pop(f, None)
    part.wake_members.pop(f, None)
    part.tail.pop(f, None)


def join(part: Partition, f: Facts) -> None:
    """Put a block into the groups it belongs to under the current triggers and wake."""
    part.touch(f)
    if f in part.e0:
        return
    flags = f.flags
    if flags & PAIRED:
        pair: str = f.pair  # type: ignore[assignment]
        group = (part.calls if f.is_call else part.results).setdefault(pair, [])
        group.append(f)
        part.dirty_pairs[pair] = None
        if len(group) > 1:
            part.multi[pair] = None
    if flags & DEDUPE:
        group = part.texts.setdefault(f.block.text, [])
        group.append(f)
        if len(group) > 1:
            part.dirty_texts[f.block.text] = None
    if flags & SUPERSEDES:
        key: str = f.block.supersession_key  # type: ignore[assignment]
        group = part.keys.setdefault(key, [])
        group.append(f)
        if len(group) > 1 or key in part.tangled:
            part.dirty_keys[key] = None


def _remove(table: dict[str, list[Facts]], key: str, f: Facts) -> bool:
    """Remove ``f`` from its group; True when members remain."""
    group = table[key]
    group.remove(f)
    if not group:
        del table[key]
        return False
    return True
