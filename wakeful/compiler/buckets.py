"""Buckets of the budget pass: candidates of one segment, taken greedily in keep order.

A :class:`Bucket` reads its candidates lazily, best first, from the partition's streams
(``streams.py``), minus what this compile excluded; units re-classed as stale this compile
follow in a sorted list of their own. Evidence buckets also charge a retrieved turn's date
line and the shared conversation frame to the first turn admitted under them. A
:class:`HeapBucket` is the fallback for scores that include NaN (see there).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from itertools import chain
from operator import itemgetter

from wakeful.compiler.blocks import Segment
from wakeful.compiler.streams import COST, FACTS, Entry, ranked
from wakeful.compiler.work import CLASS_NORMAL, CLASS_OPTIONAL, CLASS_RESOLVED, Facts, Work

_COST = itemgetter(COST)
STATIC_CLASSES = (CLASS_NORMAL, CLASS_OPTIONAL, CLASS_RESOLVED)


class Bucket:
    """Candidates of one segment, taken greedily in keep order.

    Units a fill refuses stay first in line for the next fill (they rank above every unit
    not yet read), exactly as if they had been pushed back onto a heap of all candidates.
    """

    __slots__ = ("cheapest", "pending", "segment", "source", "taken", "used")

    def __init__(self, segment: Segment, source: Iterator[Entry]) -> None:
        self.segment = segment
        self.source = source
        self.pending: list[Entry] = []
        self.cheapest = 0  # lowest cost among the first scan_limit pending units
        self.taken: list[Facts] = []
        self.used = 0

    def fill(self, room: int, work: Work, reason: str) -> int:
        """Admit what fits in ``room`` in keep order, skipping what does not, until
        ``budget.scan_limit`` candidates in a row did not fit; return the tokens used."""
        limit = work.policy.budget.scan_limit
        pending = self.pending
        if len(pending) >= limit and self.cheapest > room:
            # It would refuse the first `limit` pending units and change nothing (a unit
            # never costs less than its entry says; see _admit).
            return 0
        before = len(self.taken)
        spent, refused = _admit(self, chain(pending, self.source), room, work, reason)
        examined = len(self.taken) - before + len(refused)  # pending units first
        self.pending = pending = refused + pending[min(examined, len(pending)) :]
        self.cheapest = min(map(_COST, pending[:limit])) if pending else 0
        self.used += spent
        return spent


def _admit(
    bucket: Bucket, entries: Iterable[Entry], room: int, work: Work, reason: str
) -> tuple[int, list[Entry]]:
    """Admit ``entries`` in order while they fit in ``room``, skipping those that do not,
    until ``budget.scan_limit`` in a row did not fit: (tokens spent, units refused).

    In an evidence bucket a retrieved turn whose group is not open yet also pays its date
    line (and the shared frame, if it is the first); see ``work.Work.opening_cost``.
    """
    limit = work.policy.budget.scan_limit
    admitted, taken, opened = work.admitted, bucket.taken, work.opened
    framed = bucket.segment is Segment.EVIDENCE
    refused: list[Entry] = []
    spent = misses = 0
    for entry in entries:
        f = entry[FACTS]
        cost = entry[COST]
        group = f.group if framed else None
        if group is not None and group not in opened:
            cost += work.opening_cost(f, opened)  # the first member opens it
        if cost <= room - spent:
            spent += cost
            taken.append(f)
            admitted[f] = reason
            misses = 0
            if group is not None:
                opened.add(group)
        else:
            refused.append(entry)
            misses += 1
            if misses >= limit:
                break
    return spent, refused


def _popped(heap: list[Entry]) -> Iterator[Entry]:
    """The heap's entries, best first, each taken off only when asked for."""
    while heap:
        yield heapq.heappop(heap)


class HeapBucket(Bucket):
    """A bucket whose rank keys include NaN (a NaN weight or score): NaN has no order, so
    the outcome is whatever a heap of all candidates, built in snapshot order, produces."""

    __slots__ = ("heap",)

    def __init__(self, segment: Segment, entries: list[Entry]) -> None:
        super().__init__(segment, iter(()))
        heapq.heapify(entries)
        self.heap = entries

    def fill(self, room: int, work: Work, reason: str) -> int:
        spent, refused = _admit(self, _popped(self.heap), room, work, reason)
        for entry in refused:
            heapq.heappush(self.heap, entry)
        self.used += spent
        return spent


def buckets(work: Work) -> dict[Segment, Bucket]:
    """One bucket per segment reading the partition's streams, minus what this compile
    excluded or re-classed as stale (those follow, in their own sorted stream)."""
    part = work.part
    skip = work.excluded.keys() | work.class_override.keys()
    stale: dict[Segment, list[Entry]] = {}
    for f in work.class_override:
        entry = part.entries.get(f)
        if entry is not None and f not in work.excluded:
            klass = work.class_override[f]
            # a flagged unit also pays for its stale mark (see Work.stale_cost)
            mark = work.stale_cost(f) if f in work.stale else 0
            stale.setdefault(f.segment, []).append((-klass, *entry[1:COST], entry[COST] + mark))
    nan = {f.segment for f in part.nan}
    out: dict[Segment, Bucket] = {}
    for seg in Segment:
        if seg is Segment.ASK:
            continue
        extra = sorted(stale.get(seg, []))
        if seg in nan:
            out[seg] = HeapBucket(seg, _all_entries(work, seg, skip, extra))
            continue
        streams = [part.streams.get((seg, klass)) for klass in STATIC_CLASSES]
        sources = [ranked(s, part.entries, skip) for s in streams if s is not None]
        out[seg] = Bucket(seg, chain(*sources, extra))
    return out


def _all_entries(work: Work, seg: Segment, skip: object, extra: list[Entry]) -> list[Entry]:
    part = work.part
    entries = [e for f, e in part.entries.items() if f.segment is seg and f not in skip]  # type: ignore[operator]
    pos = part.position()
    return sorted([*entries, *extra], key=lambda e: pos[e[FACTS]])
