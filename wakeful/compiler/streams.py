"""Candidates in keep order without sorting them all: recency bounds how far back to read.

The budget takes candidates best first (``rank.keep_order``) and stops long before the end
of a large history, so sorting every candidate would be wasted work. A :class:`Stream`
keeps the candidates of one segment and eviction class in the order they arrived (for a
history, oldest first) with the running maximum of their rank keys; :func:`ranked` reads it
from the newest end into a heap and yields the heap's best entry as soon as no unread
candidate can beat it: ``best key > max key of the unread prefix``. The output is exactly
the sorted order; only the amount of reading depends on the data. It is small because a
rank key is ``w_r·seq/h`` plus importance and relevance terms that are bounded (both are
clamped to [0, 1]): a candidate older by more than that span can never outrank a newer
one, so the running maximum stays behind the newest candidates and reading stops there.

Entries are tuples ``(-class, -key, -seq, id, tiebreak, serial, facts, cost)``; ``(id,
tiebreak)`` is unique among live entries, so the order never depends on the rest, and the
serial (unique per partition) keeps a replaced entry from ever comparing equal to its
replacement. An entry is live while the partition's ``entries`` map points at that very
tuple; replaced entries are skipped and, when they pile up, compacted away.

A stream also keeps what earlier reads found: ``order``, the entries already emitted in
sorted order, and the reading state (the heap of read entries and the next unread index).
A later compile replays ``order`` and reads on only when it needs more. An entry added to a
stream that was read goes into ``order`` where it sorts, or into the heap. Which entries a
compile skips (its own exclusions) is decided while replaying, so one order serves all.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterator
from heapq import heappop, heappush
from typing import Any, Final

from wakeful.compiler.facts import Facts

Entry = tuple[int, float, int, str, int, int, Facts, int]
FACTS: Final = 6  # index of the facts in an entry
COST: Final = 7  # index of the unit's cost


class Stream:
    """Append-only candidates of one (segment, class) with running maxima of rank keys,
    and the sorted prefix read so far (see module)."""

    __slots__ = ("bounds", "dead", "entries", "heap", "next", "order")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.bounds: list[float] = []  # running maximum of the entries' rank keys
        self.dead = 0
        self.restart()

    def restart(self) -> None:
        self.order: list[Entry] = []  # emitted so far, best first
        self.heap: list[Entry] = []  # read, not yet emitted
        self.next = len(self.entries) - 1  # entries[: next + 1] are unread

    def add(self, entry: Entry) -> None:
        key = -entry[1]
        bounds = self.bounds
        self.entries.append(entry)
        bounds.append(key if not bounds or key > bounds[-1] else bounds[-1])
        if self.next == len(self.entries) - 2:
            self.next += 1  # nothing after it was read: it stays unread
        elif self.order and entry < self.order[-1]:
            insort(self.order, entry)  # it sorts among what was emitted
        else:
            heappush(self.heap, entry)  # read, waiting with the others

    def retire(self, live: dict[Any, Entry]) -> None:
        """Count one replaced entry; compact once they outnumber the live ones."""
        self.dead += 1
        if self.dead > 64 and self.dead * 2 > len(self.entries):
            self.entries = [e for e in self.entries if live.get(e[FACTS]) is e]
            self.bounds = []
            for key in [-e[1] for e in self.entries]:
                self.bounds.append(
                    key if not self.bounds or key > self.bounds[-1] else self.bounds[-1]
                )
            self.dead = 0
            self.restart()


def ranked(stream: Stream, live: dict[Any, Entry], skip: Any) -> Iterator[Entry]:
    """The stream's live entries not in ``skip``, smallest (best) first."""
    for entry in stream.order:
        f = entry[FACTS]
        if live.get(f) is entry and f not in skip:
            yield entry
    entries, bounds, heap, order = stream.entries, stream.bounds, stream.heap, stream.order
    while True:
        i = stream.next
        while i >= 0 and (not heap or -heap[0][1] <= bounds[i]):
            entry = entries[i]
            i -= 1
            if live.get(entry[FACTS]) is entry:
                heappush(heap, entry)
        stream.next = i
        if not heap:
            return
        entry = heappop(heap)
        order.append(entry)
        f = entry[FACTS]
        if live.get(f) is entry and f not in skip:
            yield entry
