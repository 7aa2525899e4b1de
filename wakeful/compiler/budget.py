"""Pass 7 — budget: fit the window to the declared budget, bucket by bucket.

    input budget = context_limit - output_reserve      (the reserve is never lent out)
    usable       = input budget - headroom - fixed request framing

Order of decisions, and why:

1. **Mandatory** content is charged first: agent instructions and load-bearing blocks, and
   the current wake (tail). None of it is ever evicted.
2. **Stable, then semi-stable** fill their own allocations from their own candidates. They
   never see dynamic content, so a new event cannot change a byte of them (cache safety).
3. If mandatory content does not fit beside them, that is **pressure**: semi-stable units go
   (lowest priority first), then stable ones. If it still does not fit, the compile fails
   with :class:`~wakeful.errors.BudgetError` naming the load-bearing ids — never a silent drop.
4. The rest, less the unused part of the ``ask`` reserve (room for the current wake to grow
   without evicting history mid-wake), is split across summaries, evidence and recent in
   proportion to their allocations; each takes units in :func:`keep_order` order, skipping
   units that do not fit, and stops once no unit could fit.
5. Room a bucket leaves unused **spills** to the others (recent, evidence, summaries).

Retrieved turns share one evidence frame, with a date line per session and day: each turn
costs its line, and the frame and a date line are charged to the first turn that needs them.

Within a bucket the eviction order of DESIGN.md holds through the eviction class: stale and
superseded first, collapsed tool logs, optional examples, then the rest by score.
"""

from __future__ import annotations

import heapq
import math
from itertools import chain

from wakeful.compiler.blocks import Segment
from wakeful.compiler.rank import keep_order
from wakeful.compiler.work import REQUEST_OVERHEAD, Exclusion, Work
from wakeful.errors import BudgetError

DYNAMIC = (Segment.SUMMARIES, Segment.EVIDENCE, Segment.RECENT)
SPILL_ORDER = (Segment.RECENT, Segment.EVIDENCE, Segment.SUMMARIES)

Entry = tuple[int, float, int, str, int, int]  # keep-order key, index, unit cost


class Bucket:
    """Candidates of one segment in a heap, taken greedily in keep order."""

    __slots__ = ("heap", "segment", "taken", "used")

    def __init__(self, segment: Segment, entries: list[Entry]) -> None:
        heapq.heapify(entries)
        self.segment = segment
        self.heap = entries
        self.taken: list[int] = []
        self.used = 0

    def fill(self, room: int, work: Work, reason: str) -> int:
        """Admit what fits in ``room`` in keep order, skipping what does not, until
        ``budget.scan_limit`` candidates in a row did not fit; return the tokens used."""
        heap, refused, spent, misses = self.heap, [], 0, 0
        limit = work.policy.budget.scan_limit
        admitted = work.admitted
        facts, opened = work.facts, work.opened
        framed = self.segment is Segment.EVIDENCE  # only evidence has shared frames
        while heap and misses < limit:
            entry = heapq.heappop(heap)
            cost = entry[5]
            group = facts[entry[4]].group if framed else None
            if group is not None and group not in opened:
                cost += work.opening_cost(entry[4], opened)  # the first member opens it
            if cost <= room - spent:
                spent += cost
                self.taken.append(entry[4])
                admitted[entry[4]] = reason
                misses = 0
                if group is not None:
                    opened.add(group)
            else:
                refused.append(entry)
                misses += 1
        for entry in refused:
            heapq.heappush(heap, entry)
        self.used += spent
        return spent


def _buckets(work: Work) -> dict[Segment, Bucket]:
    """One bucket per segment with its candidates' keep-order entries.

    The common entry is the block's static keep-order key; pairs, collapsed and stale units
    get theirs built here because their key or cost depends on this snapshot.
    """
    entries: dict[Segment, list[Entry]] = {seg: [] for seg in Segment if seg is not Segment.ASK}
    facts = work.facts
    excluded = work.excluded
    custom: dict[int, Entry] = {}
    override, pair_key, collapsed, partner = (
        work.class_override,
        work.pair_key,
        work.collapsed,
        work.partner,
    )
    for idx in chain(pair_key, override, collapsed):
        # Pair heads, re-classed heads and collapsed stand-alone results; a collapsed result
        # inside a pair is costed through its call.
        if idx in custom or (idx in partner and idx not in pair_key):
            continue
        f = facts[idx]
        klass = override.get(idx, f.klass)
        other = partner.get(idx)
        if other is None:
            custom[idx] = (-klass, -f.key, -f.seq, f.id, idx, work.cost(idx))
            continue
        mate = facts[other]
        note = collapsed.get(other)
        note_tokens = note[1] if note is not None else -1
        memo = f.unit  # a pair's key and cost only change with its halves and class
        if memo is None or memo[0] is not mate or memo[1] != klass or memo[2] != note_tokens:
            key = (-klass, -pair_key[idx], -f.seq, f.id)
            memo = f.unit = (mate, klass, note_tokens, key, work.cost(idx))
        custom[idx] = (*memo[3], idx, memo[4])
    get = custom.get
    for seg, pool in work.pools.items():
        entries[seg] = [
            get(idx) or (*facts[idx].entry, idx, facts[idx].tokens)
            for idx in pool
            if idx not in excluded
        ]
    return {seg: Bucket(seg, entries[seg]) for seg in entries}


def budget(work: Work) -> None:
    spec = work.policy.budget
    shares = spec.allocations
    total = spec.input_budget
    usable = total - math.ceil(total * shares.headroom) - REQUEST_OVERHEAD
    work.usable = usable
    facts = work.facts
    used = dict.fromkeys(Segment, 0)

    mandatory = [i for i in work.mandatory if i not in work.excluded]
    for idx in mandatory:
        used[facts[idx].segment] += work.cost(idx)
        work.admitted[idx] = "load_bearing" if idx != work.instructions else "agent_instructions"
    for idx in work.tail:
        used[Segment.ASK] += facts[idx].tokens
        work.admitted[idx] = "current_wake"

    buckets = _buckets(work)
    for seg, share in ((Segment.STABLE, shares.stable), (Segment.SEMI_STABLE, shares.semi_stable)):
        used[seg] += buckets[seg].fill(int(total * share) - used[seg], work, "ranked")

    required = sum(used.values())
    if required > usable:
        required = _relieve(work, buckets, used, required - usable) + usable
        if required > usable:
            _fail(work, mandatory, used, usable)

    reserve = max(0, int(total * shares.ask) - used[Segment.ASK])
    room = max(0, usable - required - reserve)
    weights = {
        Segment.SUMMARIES: shares.summaries,
        Segment.EVIDENCE: shares.evidence,
        Segment.RECENT: shares.recent,
    }
    weight_sum = sum(weights.values())
    spent = 0
    if weight_sum > 0:
        for seg in DYNAMIC:
            spent += buckets[seg].fill(int(room * weights[seg] / weight_sum), work, "ranked")
    for seg in SPILL_ORDER:
        spent += buckets[seg].fill(room - spent, work, "spill")


def _relieve(
    work: Work, buckets: dict[Segment, Bucket], used: dict[Segment, int], need: int
) -> int:
    """Evict admitted semi-stable, then stable units (lowest priority first); return the
    tokens still missing (<= 0 when relieved)."""
    for seg in (Segment.SEMI_STABLE, Segment.STABLE):
        taken = sorted(buckets[seg].taken, key=lambda i: keep_order(work, i), reverse=True)
        for idx in taken:
            if need <= 0:
                return need
            cost = work.cost(idx)
            del work.admitted[idx]
            buckets[seg].taken.remove(idx)
            used[seg] -= cost
            need -= cost
            work.exclude(
                idx,
                Exclusion(
                    "pressure",
                    "budget.allocations.ask",
                    "evicted so the current wake and load-bearing blocks fit",
                ),
            )
    return need


def _fail(work: Work, mandatory: list[int], used: dict[Segment, int], usable: int) -> None:
    facts = work.facts
    ids = tuple(facts[i].id for i in mandatory if facts[i].block.load_bearing)
    if not ids:
        ids = tuple(facts[i].id for i in work.tail)
    spec = work.policy.budget
    need = sum(used.values())
    raise BudgetError(
        f"cannot fit {need} tokens of load-bearing blocks and the current wake into {usable} "
        f"usable tokens (context_limit {spec.context_limit} - output_reserve "
        f"{spec.output_reserve} - headroom); load-bearing/current ids: {', '.join(ids)}. "
        "Raise budget.context_limit, consolidate the registry, or hand the wake off.",
        ids,
    )
