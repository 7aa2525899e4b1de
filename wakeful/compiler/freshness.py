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


def freshness(work: Work) -> None:
    part = work.part
    exclude = work.policy.staleness.mode == "exclude"
    out: list[tuple[Facts, str]] = []
    now = micros(work.now)
    assert now is not None
    max_age = work.policy.staleness.max_age_hours
    excluded, tail, partner = part.excluded, part.tail, part.partner
    # Stale: past its stale_after (that reason first), or older than its kind's max age.
    # Inline, on the facts' times in microseconds: this loop runs over every timed block.
    for f in part.fresh:
        stale_after, captured_at, why = f.times
        if stale_after is None or stale_after > now:
            if not max_age or captured_at is None:
                continue
            hours = max_age.get(f.block.kind)
            if hours is None or now - captured_at <= timedelta(hours=hours) // _MICROSECOND:
                continue
            why = f"older than {hours:g}h"
        if f in excluded:
            continue
        if exclude and not (f in tail or f.flags & LOAD_BEARING):
            out.append((f, why))
            continue
        work.stale[f] = True
        head = f
        other = partner.get(f)
        if other is not None and other.seq < f.seq:
            head = other
        work.class_override[head] = CLASS_STALE
    if len(out) > 1 and any(map(partner.__contains__, map(itemgetter(0), out))):
        names = {f for f, _ in out}
        if any(partner.get(f) in names for f in names):
            # Two stale halves of one pair: the one first in the snapshot names the reason.
            pos = part.position()
            out.sort(key=lambda item: pos[item[0]])
    for f, why in out:
        memo = f.xrow  # reuse last compile's equal exclusion: record then reuses its row
        if memo is not None and memo[0].detail == why and memo[0].reason == "stale":
            excl = memo[0]
        else:
            excl = Exclusion("stale", "staleness.mode", why)
        work.exclude(f, excl)
