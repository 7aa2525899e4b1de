"""Where the few blocks a pass looks for sit in a snapshot's facts, kept compile to compile.

Several passes look for a handful of blocks among the whole snapshot: recorded evidence
(``evidence.py``), stale tool results (``live_output.py``), on-demand tool schemas and
results shortened when recorded (``clearing.py``), turns and summaries over their share of
the window (``oversize.py``). Each asks :class:`Positions` once per snapshot list. A list
that is the last one edited in one place (what ``FactsTable.facts_of`` reports as its
``edit``: the previous list and how many facts the two share at each end) has every
answer carried over: the positions before the edit as they were, those after it moved by
the change in length, and only the edited stretch read. Any other list is read whole, at
C speed, the first time each question is asked of it.

A question is a key and a test: the test maps a run of facts to whether each passes (at C
speed where it can: ``map`` over ``operator`` functions), must be a pure function of each
fact (facts are immutable), and the key must name everything it depends on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import compress

from wakeful.compiler.facts import Facts

__all__ = ["Edit", "Positions", "Test", "without_positions"]

# The list a snapshot's facts were edited from, and the facts the two share at their start
# and at their end (``lookup.common_block_ends``, ``lookup.common_facts_ends``).
Edit = tuple[Sequence[Facts], int, int]
Test = Callable[[Sequence[Facts]], Iterable[object]]


class Positions:
    """The answers to each question for one facts list (see the module docstring)."""

    __slots__ = ("found", "read", "snap", "tests")

    def __init__(self) -> None:
        self.snap: Sequence[Facts] | None = None
        self.found: dict[Hashable, list[int]] = {}
        self.tests: dict[Hashable, Test] = {}
        self.read = 0  # facts read to answer questions: counted by the work-count test

    def see(self, snap: Sequence[Facts], edit: Edit | None) -> None:
        """Make ``snap`` the list questions are about, carrying the answers over when it
        is the last list edited in one place."""
        last = self.snap
        if snap is last:
            return
        self.snap = snap
        if edit is None or last is None or edit[0] is not last:
            self.found.clear()
            return
        _, head, tail = edit
        old_end, new_end = len(last) - tail, len(snap) - tail
        middle = snap[head:new_end]
        shift = len(snap) - len(last)
        for key, at in self.found.items():
            test = self.tests[key]
            self.read += len(middle)
            first_after = bisect_left(at, old_end)
            self.found[key] = [
                *at[: bisect_left(at, head)],
                *compress(range(head, new_end), test(middle)),
                *(p + shift for p in at[first_after:]),
            ]

    def of(self, key: Hashable, test: Test) -> list[int]:
        """The positions, ascending, of the facts of the current list that pass ``test``."""
        at = self.found.get(key)
        if at is None:
            snap = self.snap or ()
            self.tests[key] = test
            self.read += len(snap)
            at = self.found[key] = list(compress(range(len(snap)), test(snap)))
        return at


def without_positions(at: list[int], left_out: list[int]) -> list[int]:
    """``at`` (ascending positions in a list) as positions in that list less the facts at
    ``left_out`` (ascending): those left out dropped, the others moved up."""
    if not left_out:
        return at
    gone = set(left_out)
    return [p - bisect_left(left_out, p) for p in at if p not in gone]
