"""Pass 4 — freshness: blocks past ``stale_after`` (or older than the kind's max age).

``staleness.mode = "exclude"`` drops them; ``"flag"`` keeps them, marks evidence
``stale="true"`` and puts them first in line for eviction. Load-bearing blocks and the
current wake are only ever flagged, never dropped. ``now`` is the compile's argument: this
is the one pass whose outcome depends on the time, so it runs on every compile, over the
partition's short list of blocks that carry a time at all.
"""

from __future__ import annotations

from datetime import timedelta
from operator import itemgetter

from wakeful.compiler.facts import micros
from wakeful.compiler.work import CLASS_STALE, LOAD_BEARING, Exclusion, Facts, Work

_MICROSECOND = timedelta(microseconds=1)


def is_stale(work: Work, f: Facts, now: int | None = None) -> str | None:
    """The reason a block is stale at ``work.now`` (``now``: the same in microseconds), or
    None. The reason only depends on the block and the policy, so it is remembered."""
    if now is None:
        now = micros(work.now)
    assert now is not None
    stale_after, captured_at, reason = f.times
    if stale_after is not None and stale_after <= now:
        return reason
    hours = work.policy.staleness.max_age_hours.get(f.block.kind)
    if hours is not None and captured_at is not None:
        if now - captured_at > timedelta(hours=hours) // _MICROSECOND:
            return f"older than {hours:g}h"
    return None


def freshness(work: Work) -> None:
    part = work.part
    exclude = work.policy.staleness.mode == "exclude"
    out: list[tuple[Facts, str]] = []
    now = micros(work.now)
    for f in part.fresh:
        if f in part.excluded:
            continue
        why = is_stale(work, f, now)
        if why is None:
            continue
        if exclude and not (f in part.tail or f.flags & LOAD_BEARING):
            out.append((f, why))
            continue
        work.stale[f] = True
        head = f
        other = part.partner.get(f)
        if other is not None and other.seq < f.seq:
            head = other
        work.class_override[head] = CLASS_STALE
    if len(out) > 1 and any(map(part.partner.__contains__, map(itemgetter(0), out))):
        names = {f for f, _ in out}
        if any(part.partner.get(f) in names for f in names):
            # Two stale halves of one pair: the one first in the snapshot names the reason.
            pos = part.position()
            out.sort(key=lambda item: pos[item[0]])
    for f, why in out:
        excl = Exclusion("stale", "staleness.mode", why)
        memo = f.xrow  # reuse last compile's equal exclusion: record then reuses its row
        work.exclude(f, memo[0] if memo is not None and memo[0] == excl else excl)
