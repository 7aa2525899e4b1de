"""Pass 4 — freshness: blocks past ``stale_after`` (or older than the kind's max age).

``staleness.mode = "exclude"`` drops them; ``"flag"`` keeps them, marks evidence
``stale="true"`` and puts them first in line for eviction. Load-bearing blocks and the
current wake are only ever flagged, never dropped. ``now`` is the compile's argument: this
is the one pass whose outcome depends on the time.
"""

from __future__ import annotations

from datetime import timedelta

from wakeful.compiler.work import CLASS_STALE, LOAD_BEARING, Exclusion, Work


def is_stale(work: Work, idx: int) -> str | None:
    """The reason a block is stale at ``work.now``, or None."""
    block = work.facts[idx].block
    now = work.now
    if block.stale_after is not None and block.stale_after <= now:
        return f"stale_after {block.stale_after.isoformat()}"
    hours = work.policy.staleness.max_age_hours.get(block.kind)
    if hours is not None and block.captured_at is not None:
        if now - block.captured_at > timedelta(hours=hours):
            return f"older than {hours:g}h"
    return None


def freshness(work: Work) -> None:
    exclude = work.policy.staleness.mode == "exclude"
    tail = set(work.tail)
    for idx in work.lists["freshness"]:
        if idx in work.excluded:
            continue
        why = is_stale(work, idx)
        if why is None:
            continue
        protected = idx in tail or work.facts[idx].flags & LOAD_BEARING
        if exclude and not protected:
            work.exclude(idx, Exclusion("stale", "staleness.mode", why))
            continue
        work.stale[idx] = True
        head = idx
        other = work.partner.get(idx)
        if other is not None and work.facts[other].seq < work.facts[idx].seq:
            head = other
        work.class_override[head] = CLASS_STALE
