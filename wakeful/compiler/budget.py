"""Pass 7 — budget: fit the window to the declared budget, bucket by bucket.

    input budget = context_limit - output_reserve      (the reserve is never lent out)
    usable       = input budget - headroom - fixed request framing (Work.fixed_overhead)

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
   units that do not fit, and stops once ``budget.scan_limit`` units in a row did not fit.
5. Room a bucket leaves unused **spills** to the others (recent, evidence, summaries).

The history (``recent``) is the exception to best-first: when it does not fit its share
whole, it is cut at a quantized anchor and taken whole from there (``history.py``), so its
start moves in steps and the provider's cached prefix survives between them.

Retrieved turns share one evidence frame, with a date line per session and day: each turn
costs its line, and the frame and a date line are charged to the first turn that needs them.

Within a bucket the eviction order of DESIGN.md holds through the eviction class: stale and
superseded first, collapsed tool logs, optional examples, then the rest by score. A bucket
reads its candidates lazily in that order (``streams.py``), so a full bucket costs the
units it looked at, not the length of the history.
"""

from __future__ import annotations

import math

from wakeful.compiler.blocks import Segment
from wakeful.compiler.buckets import Bucket
from wakeful.compiler.buckets import buckets as make_buckets
from wakeful.compiler.history import admit_history
from wakeful.compiler.rank import keep_order
from wakeful.compiler.select import tail_order
from wakeful.compiler.work import Exclusion, Facts, Work
from wakeful.errors import BudgetError

DYNAMIC = (Segment.SUMMARIES, Segment.EVIDENCE, Segment.RECENT)
SPILL_ORDER = (Segment.RECENT, Segment.EVIDENCE, Segment.SUMMARIES)


def budget(work: Work) -> None:
    spec = work.policy.budget
    shares = spec.allocations
    total = spec.input_budget
    work.overhead = work.fixed_overhead(work.may_open_with_assistant())
    usable = total - math.ceil(total * shares.headroom) - work.overhead
    work.usable = usable
    used = dict.fromkeys(Segment, 0)

    stale = work.stale
    mandatory = [f for f in work.part.mandatory if not work.is_excluded(f)]
    for f in mandatory:
        used[f.segment] += work.cost(f) + (work.stale_cost(f) if f in stale else 0)
        work.admitted[f] = "load_bearing" if f is not work.instructions else "agent_instructions"
    for f in work.tail:
        used[Segment.ASK] += f.tokens + (work.stale_cost(f) if f in stale else 0)
        work.admitted[f] = "current_wake"

    buckets = make_buckets(work)
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
    spill: tuple[Segment, ...] = SPILL_ORDER
    if weight_sum > 0:
        # Summaries and evidence take their shares first; the history takes the rest. A cut
        # in the history costs the prompt cache everything after it, so the history is cut
        # only when the window is full, not when it outgrows a share others leave unused.
        for seg in (Segment.SUMMARIES, Segment.EVIDENCE):
            spent += buckets[seg].fill(int(room * weights[seg] / weight_sum), work, "ranked")
        history = admit_history(work, room - spent)
        if history is not None:  # the history is cut at its anchor: nothing more joins it
            spent += history
            spill = tuple(s for s in SPILL_ORDER if s is not Segment.RECENT)
        else:
            spent += buckets[Segment.RECENT].fill(room - spent, work, "ranked")
    for seg in spill:
        spent += buckets[seg].fill(room - spent, work, "spill")


def _relieve(
    work: Work, buckets: dict[Segment, Bucket], used: dict[Segment, int], need: int
) -> int:
    """Evict admitted semi-stable, then stable units (lowest priority first); return the
    tokens still missing (<= 0 when relieved)."""
    for seg in (Segment.SEMI_STABLE, Segment.STABLE):
        taken = sorted(buckets[seg].taken, key=lambda f: keep_order(work, f), reverse=True)
        for f in taken:
            if need <= 0:
                return need
            cost = work.cost(f)
            del work.admitted[f]
            buckets[seg].taken.remove(f)
            used[seg] -= cost
            need -= cost
            work.exclude(
                f,
                Exclusion(
                    "pressure",
                    "budget.allocations.ask",
                    "evicted so the current wake and load-bearing blocks fit",
                ),
            )
    return need


def _fail(work: Work, mandatory: list[Facts], used: dict[Segment, int], usable: int) -> None:
    pos = work.position()
    ordered = sorted(mandatory, key=pos.__getitem__)
    ids = tuple(f.id for f in ordered if f.block.load_bearing)
    if not ids:
        ids = tuple(f.id for f in tail_order(work))
    spec = work.policy.budget
    need = sum(used.values())
    raise BudgetError(
        f"cannot fit {need} tokens of load-bearing blocks and the current wake into {usable} "
        f"usable tokens (context_limit {spec.context_limit} - output_reserve "
        f"{spec.output_reserve} - headroom); load-bearing/current ids: {', '.join(ids)}. "
        "Raise budget.context_limit, consolidate the registry, or hand the wake off.",
        ids,
    )
