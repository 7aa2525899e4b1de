"""The partition's per-block and per-unit state, redone for the blocks an update touched.

After the groups are decided (``select.pair_group``, ``dedupe``), each touched block gets
its static exclusion and ledger row, and whether it is mandatory (load-bearing, outside the
tail) or needs a freshness check on every compile. Then each touched *unit* — a tool pair
headed by its call, or a lone block — gets its collapse, its pair key, its keep-order entry
in the stream of its segment and class (``streams.py``), and its place among the blocks
below a relevance floor. These loops run once per block on a cold compile, so they are
written flat; the decisions they encode are those of the pass modules they cite.
"""

from __future__ import annotations

from wakeful.compiler.collapse import collapse_unit
from wakeful.compiler.facts import CAPTURED, LOAD_BEARING, PAIRED, RESOLVED, STALE_AFTER, Facts
from wakeful.compiler.ledger import EXCLUDED, LedgerRow
from wakeful.compiler.rank import below_floor, unit_entry
from wakeful.compiler.state import DUPLICATE, Partition
from wakeful.compiler.streams import COST, FACTS, Entry, Stream


def refresh(part: Partition) -> None:
    """Redo the state of every touched block, then of every unit they belong to."""
    present, partner, tail = part.present, part.partner, part.tail
    e0, sel, dd, sup, sup_t = part.e0, part.sel, part.dd, part.sup, part.sup_t
    excluded, rows, mandatory, fresh = part.excluded, part.rows, part.mandatory, part.fresh
    max_age = part.max_age
    heads: dict[Facts, None] = {}
    for f in part.units:
        if f not in present:
            for table in (excluded, rows, mandatory, fresh, part.collapsed):
                table.pop(f, None)
            drop_head(part, f)
            continue
        why = e0.get(f) or sel.get(f) or dd.get(f) or sup.get(f) or sup_t.get(f)
        if why is None:
            if excluded.pop(f, None) is not None:
                del rows[f]
                part.base_rows_stale(f)
        elif excluded.get(f) != why:
            excluded[f] = why
            rows[f] = LedgerRow(
                f.id, f.kind_s, f.block.source, f.seg_s, EXCLUDED, why.reason, why.rule,
                why.detail, f.tokens, f.tokens, -1, f.key, "",
            )  # fmt: skip
            part.base_rows_stale(f)
        # registered (state.registered): not gated by a trigger, not a duplicate tool id
        ok = why is None or (f not in e0 and why.reason != DUPLICATE)
        flags = f.flags
        if ok and why is None and flags & LOAD_BEARING and not flags & PAIRED and f not in tail:
            mandatory[f] = None
        elif f in mandatory:
            del mandatory[f]
        if ok and (flags & STALE_AFTER or (max_age and flags & CAPTURED)):
            fresh[f] = None
        elif f in fresh:
            del fresh[f]
        other = partner.get(f)
        if other is not None and not f.is_call:
            drop_head(part, f)  # a paired result is carried by its call
            heads[other] = None
        else:
            heads[f] = None
    for h in heads:
        if h in present:
            unit(part, h)


def unit(part: Partition, h: Facts) -> None:
    """Collapse, pair key, keep-order entry and relevance floor of the unit headed by h."""
    other = part.partner.get(h) if h.is_call else None
    if h.flags & RESOLVED or (other is not None and other.flags & RESOLVED):
        collapse_unit(part, h, other)
    elif h in part.resolved or (other if other is not None else h) in part.collapsed:
        collapse_unit(part, h, other)
    flags = h.flags
    candidate = (
        h not in part.excluded
        and h not in part.tail
        and (h.is_call if flags & PAIRED else not flags & LOAD_BEARING)
    )  # select.pooled, less the excluded
    if not candidate:
        unlist(part, h)
        part.minrel.pop(h, None)
        if other is not None:
            part.pair_key[h] = max(h.key, other.key)
        else:
            part.pair_key.pop(h, None)
        return
    part.serial += 1
    entry = unit_entry(part, h, other, part.serial)
    old = part.entries.get(h)
    if old is None or old[:5] != entry[:5] or old[COST] != entry[COST]:
        part.entries[h] = entry
        totals = part.totals
        if old is not None:
            stream_of(part, old).retire(part.entries)  # after: a compaction drops it
            totals[h.segment] -= old[COST]
        stream_of(part, entry).add(entry)
        totals[h.segment] = totals.get(h.segment, 0) + entry[COST]
    if entry[1] != entry[1]:  # a NaN score: see budget.HeapBucket
        part.nan[h] = None
    elif h in part.nan:
        del part.nan[h]
    if part.eviction.min_relevance and below_floor(part, h):
        part.minrel[h] = None
    elif h in part.minrel:
        del part.minrel[h]


def drop_head(part: Partition, f: Facts) -> None:
    """Forget what ``f`` held as the head of a unit."""
    unlist(part, f)
    part.resolved.pop(f, None)
    part.pair_key.pop(f, None)
    part.minrel.pop(f, None)


def stream_of(part: Partition, entry: Entry) -> Stream:
    key = (entry[FACTS].segment, -entry[0])
    stream = part.streams.get(key)
    if stream is None:
        stream = part.streams[key] = Stream()
    return stream


def unlist(part: Partition, f: Facts) -> None:
    old = part.entries.pop(f, None)
    if old is not None:
        stream_of(part, old).retire(part.entries)
        part.totals[f.segment] -= old[COST]
    part.nan.pop(f, None)
