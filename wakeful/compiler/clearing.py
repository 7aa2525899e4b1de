"""Clearing old tool output: the history's tool results give way in large, rare steps.

A tool-heavy session grows by tool output, most of it read once (a file, a search, a log)
and never needed whole again. Sent on every later call it is read from the prompt cache
each time; past some size that costs more than writing a shorter window once. So when the
history before the current wake reaches ``eviction.clear_tool_output_at`` tokens, the
results of its earlier wakes are **cleared**: marked resolved, they reach the collapse pass
(``collapse.py``), which shows a one-line note in their place — the tool, the size, the
first line, and that the tool can be called again. The call stays as it was, so the pair
stays valid and the model's own turn is unchanged. (No tool is added for reading cleared
output back: a tool schema joining the window would rewrite the whole cache.)

Which results are cleared follows from the snapshot alone, and changes rarely: positions
count the tokens of the history's blocks from its start (as ``history.py`` does), and a
result is cleared when it ends at or before the **boundary**. The boundary is replayed
from the ends of the history's wakes: it starts at 0, and once a wake's end lies
``step = clear_tool_output_at - clear_tool_output_keep`` past it plus
``clear_tool_output_keep`` (and at least ``clear_tool_output_at`` from the start), it moves
to that end minus ``clear_tool_output_keep``. The newest ``clear_tool_output_keep`` tokens
thus always keep their output; each move rewrites the cache from the first newly cleared
result once, and every call until the next move reads it. A move goes as far as it can
rather than to a multiple of ``step``: the output left whole after a step is read on every
call until the next one, and the rewrite that a step costs covers it either way
(``wakeful bench cache`` compares the two).

That needs a cache entry where the cleared part ends: the provider looks back only ~20
content blocks from a breakpoint, and the history's breakpoints sit far after it. So the
last cleared result carries :data:`CLEARED_END_META` and the renderer puts a ``cleared``
breakpoint after it; every call refreshes that entry for free (it lies inside what the call
reads). On the wake whose history moved the boundary, the mark stays where the previous
boundary put it — the entry the calls before wrote — so the step reads everything up to
there and writes only what changed; the next wake's calls mark the new end. Both ends follow
from the snapshot alone: the previous boundary is this one's history without its newest wake.

The tool schemas a snapshot marks :data:`ON_DEMAND_META` (the built-in ``read_result``) are
sent only while a result shortened when it was recorded (``CAPPED_META``) is in the
snapshot, so an agent pays for them only when they can help.

Both work on the snapshot's facts and say *which* blocks change (:func:`cleared_results`,
:func:`unneeded_on_demand`); the pipeline keeps the facts of each cleared copy by its source
(``lookup.FactsTable.derived``), so a block cleared once is not summarised again. The scans
run over attributes of the facts, at C speed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count, repeat
from operator import attrgetter, contains, eq, is_, is_not, ne, not_

from wakeful.compiler.blocks import (
    CAPPED_META,
    CLEARED_END_META,
    CLEARED_META,
    ON_DEMAND_META,
    BlockKind,
    Segment,
)
from wakeful.compiler.facts import Derivation, Facts
from wakeful.compiler.policy import Eviction
from wakeful.compiler.positions import Edit, Positions, without_positions

__all__ = [
    "CAPPED_META",
    "CLEARED",
    "CLEARED_END",
    "CLEARED_END_META",
    "CLEARED_META",
    "ON_DEMAND_META",
    "ClearingMemo",
    "cleared_results",
    "clearing_boundary",
    "unneeded_on_demand",
]

# The derivations of a cleared result, and of the one the ``cleared`` breakpoint follows.
CLEARED: Derivation = (False, ((CLEARED_META, "1"),))
CLEARED_END: Derivation = (False, ((CLEARED_META, "1"), (CLEARED_END_META, "1")))

_SEGMENT = attrgetter("segment")
_WAKE = attrgetter("wake")
_TOKENS = attrgetter("tokens")
_KIND = attrgetter("kind_s")
_BLOCK = attrgetter("block")
_META = attrgetter("meta")
_RESOLVED = attrgetter("block.resolved")
_TOOL_RESULT = BlockKind.TOOL_RESULT.value
_TOOL_SCHEMA = BlockKind.TOOL_SCHEMA.value


class _History:
    """The history's facts (``recent``, outside the current wake), their indexes in the
    snapshot, their wakes and where each ends (tokens from the history's start)."""

    __slots__ = ("changes", "facts", "index", "newest", "positions", "read_back", "state", "wakes")

    def __init__(self, index: list[int], facts: list[Facts], start: int = 0) -> None:
        self.index = index
        self.facts = facts
        self.wakes: list[str | None] = list(map(_WAKE, facts))
        self.positions = list(accumulate(map(_TOKENS, facts), initial=start))[1:]
        self.changes: list[int] | None = None  # entries whose wake is not the one before's
        # The last entry with a wake (-1: none), once known: a history's newest stretch
        # may have none, and finding it again would read back through all of them.
        self.newest: int | None = None
        # Which state of the history this is: a new object whenever it is extended in place.
        self.state = object()
        self.read_back = 0  # entries read back to find the newest wake (counted, see below)

    def extended(self, keep: int, more: _History) -> _History:
        """This history made its first ``keep`` entries followed by ``more`` (whose
        positions continue from theirs), in place: the work is in proportion to what
        changed, not to the history. The caller holds no other view of it."""
        del self.index[keep:], self.facts[keep:], self.wakes[keep:], self.positions[keep:]
        self.index += more.index
        self.facts += more.facts
        self.wakes += more.wakes
        self.positions += more.positions
        if self.changes is not None:  # those among the kept entries are the same
            del self.changes[bisect_left(self.changes, keep) :]
            self.changes += self._changes_from(max(keep, 1))
        newest = self.newest if self.newest is not None and self.newest < keep else None
        at = more.newest_wake_at() if more.facts else -1
        # The kept entries hold the newest wake when ``more`` has none.
        self.newest = keep + at if at >= 0 else newest
        self.state = object()
        return self

    def newest_wake_at(self) -> int:
        """The index of the last entry that has a wake, or -1."""
        if self.newest is None:
            wakes = self.wakes
            self.newest = next(
                compress(range(len(wakes) - 1, -1, -1), map(is_not, reversed(wakes), repeat(None))),
                -1,
            )
            self.read_back += len(wakes) - max(self.newest, 0)
        return self.newest

    def _changes_from(self, first: int) -> list[int]:
        wakes = self.wakes
        return list(compress(range(first, len(wakes)), map(ne, wakes[first:], wakes[first - 1 :])))

    def wake_ends(self) -> list[int]:
        """Where each wake of the history ends, in order."""
        wakes, positions = self.wakes, self.positions
        if not wakes:
            return []
        if self.changes is None:
            self.changes = self._changes_from(1)
        return [*(positions[n - 1] for n in self.changes), positions[-1]]

    def without(self, wake: str) -> _History:
        keep = list(map(ne, self.wakes, repeat(wake)))
        return _History(list(compress(self.index, keep)), list(compress(self.facts, keep)))


# A cleared_results answer as kept for the next compile (see ClearingMemo.cleared).
_Cleared = tuple[int, list[int], list[tuple[int, Derivation]], int, object]


class ClearingMemo:
    """The last snapshot's facts and history, kept by the caller between compiles: the
    next snapshot's history is recomputed only past the blocks the two share at their
    start (a history grows at its end), since positions count from the start."""

    __slots__ = ("built", "cleared", "current", "history", "kept", "scanned", "snap")

    def __init__(self) -> None:
        self.snap: Sequence[Facts] = ()
        self.current: str | None = None
        self.history: _History | None = None
        # Entries at the start of ``history`` that are the last history's own.
        self.kept = 0
        # The last answer of :func:`cleared_results`: the number of history entries it
        # was read from, the history indexes of the results cleared among them, the
        # answer, which of its entries was marked (-1: none) and the state of the history
        # it was read from (``_History.state``). Its part over entries that are still that
        # history's own is the same again.
        self.cleared: _Cleared | None = None
        # History entries the last :func:`cleared_results` read (0 when none changed
        # below the boundary): counted by the caller, never part of the output.
        self.scanned = 0
        # History entries the last compile built or read back through to find the newest
        # wake: the history less the kept ones, while it is extended. Counted likewise.
        self.built = 0


def _scan(snap: Sequence[Facts], current: str | None, first: int, start: int) -> _History:
    """The history among ``snap[first:]``, its positions continuing from ``start``."""
    segments = map(_SEGMENT, snap[first:])
    index = list(compress(range(first, len(snap)), map(is_, segments, repeat(Segment.RECENT))))
    facts = list(map(snap.__getitem__, index))
    if current is not None:
        keep = list(map(ne, map(_WAKE, facts), repeat(current)))
        index, facts = list(compress(index, keep)), list(compress(facts, keep))
    return _History(index, facts, start)


def _history(
    snap: Sequence[Facts],
    current: str | None,
    memo: ClearingMemo | None = None,
    edit: Edit | None = None,
) -> _History:
    if memo is None:
        return _scan(snap, current, 0, 0)
    last = memo.history
    if last is None or memo.current != current:
        history = _scan(snap, current, 0, 0)
        memo.kept = 0
        memo.built = len(history.facts)
    else:
        if edit is not None and edit[0] is memo.snap:  # how far the two agree is known
            head = edit[1]
        else:
            shared = min(len(snap), len(memo.snap))
            head = next(compress(count(), map(is_not, snap, memo.snap)), shared)
        keep = bisect_left(last.index, head)  # entries before ``head``: the same blocks
        start = last.positions[keep - 1] if keep else 0
        more = _scan(snap, current, head, start)
        memo.history = None  # extended in place: if that fails, the next compile starts over
        history = last.extended(keep, more)
        memo.kept = keep
        memo.built = len(more.facts)
    memo.snap, memo.current, memo.history = snap, current, history
    return history


def _boundary(history: _History, eviction: Eviction, ends: list[int] | None = None) -> int:
    """Where clearing ends for this history (see the module docstring); ``ends``: its
    wake ends, when known."""
    at, keep = eviction.clear_tool_output_at, eviction.clear_tool_output_keep
    if at <= 0 or not eviction.collapse_resolved:
        return 0
    step = at - keep
    boundary = 0
    for end in history.wake_ends() if ends is None else ends:
        if end >= at and end - keep >= boundary + step:
            boundary = end - keep
    return boundary


def clearing_boundary(snap: Sequence[Facts], current: str | None, eviction: Eviction) -> int:
    """The history position (tokens from its start) up to which tool output is cleared;
    0 when the history is below the threshold or clearing is off."""
    return _boundary(_history(snap, current), eviction)


def _previous_boundary(history: _History, eviction: Eviction, ends: list[int]) -> int:
    """The boundary of the previous wake's history: this one without its newest wake
    (``ends``: this one's wake ends)."""
    wakes = history.wakes
    at = history.newest_wake_at()
    if at < 0:
        return _boundary(history, eviction, ends)
    newest = wakes[at]
    assert newest is not None  # the entry at ``at`` has a wake
    if wakes[-1] == newest:
        start = len(wakes) - 1
        while start and wakes[start - 1] == newest:
            start -= 1
        try:
            wakes.index(newest, 0, start)
        except ValueError:  # the newest wake is the history's last stretch, and only there
            return _boundary(history, eviction, ends[:-1])
    return _boundary(history.without(newest), eviction)


def cleared_results(
    snap: Sequence[Facts],
    current: str | None,
    eviction: Eviction,
    memo: ClearingMemo | None = None,
    edit: Edit | None = None,
) -> list[tuple[int, Derivation]]:
    """The snapshot indexes of the tool results cleared, in order, each with its
    derivation (:data:`CLEARED`, or :data:`CLEARED_END` for the one the breakpoint follows).
    ``memo`` (the caller's, from the last snapshot) and ``edit`` (how ``snap`` was edited
    from a list, ``positions.Edit``) only save work."""
    before = memo.history.state if memo is not None and memo.history is not None else None
    history = _history(snap, current, memo, edit)
    ends = history.wake_ends()
    boundary = _boundary(history, eviction, ends)
    if memo is not None:
        memo.scanned = 0
    if not boundary:
        if memo is not None:
            memo.cleared = None
        return []
    # The end to mark: the previous boundary's on the wake that moved it (see above).
    marked = min(boundary, _previous_boundary(history, eviction, ends) or boundary)
    if memo is not None:
        memo.built, history.read_back = memo.built + history.read_back, 0
    positions = history.positions
    upto = bisect_right(positions, boundary)
    # Entries before ``start`` are the last history's own and were read last time: their
    # cleared results are the same. (The marked end is at most the boundary, so it too
    # is found among the first ``upto`` entries.)
    start, cleared, out = 0, list[int](), list[tuple[int, Derivation]]()
    known = memo.cleared if memo is not None else None
    # (Only when ``memo.kept`` counts entries of the very history it was read from.)
    if (
        memo is not None
        and known is not None
        and known[4] is before
        and min(known[0], upto) <= memo.kept
    ):
        start = min(known[0], upto)
        kept = bisect_left(known[1], start)
        cleared, out = known[1][:kept], known[2][:kept]
        if 0 <= known[3] < kept:
            out[known[3]] = (out[known[3]][0], CLEARED)
    facts = history.facts
    kinds = map(_KIND, facts[start:upto])
    results = list(compress(range(start, upto), map(eq, kinds, repeat(_TOOL_RESULT))))
    resolved = map(_RESOLVED, map(facts.__getitem__, results))
    new = list(compress(results, map(not_, resolved)))
    cleared += new
    out += zip(map(history.index.__getitem__, new), repeat(CLEARED))
    last = bisect_right(cleared, bisect_right(positions, marked) - 1) - 1
    if last >= 0:
        out[last] = (out[last][0], CLEARED_END)
    if memo is not None:
        memo.cleared, memo.scanned = (upto, cleared, out, last, history.state), upto - start
    return list(out)


def _schemas(facts: Sequence[Facts]) -> Iterable[bool]:
    return map(eq, map(_KIND, facts), repeat(_TOOL_SCHEMA))


def _capped(facts: Sequence[Facts]) -> Iterable[bool]:
    return map(contains, map(_META, map(_BLOCK, facts)), repeat(CAPPED_META))


def unneeded_on_demand(
    snap: Sequence[Facts], marks: Positions | None = None, left_out: list[int] | None = None
) -> list[int]:
    """Indexes of the on-demand tool schemas to leave out: all of them, unless a result
    shortened when it was recorded is in the snapshot. ``marks`` (on the list ``snap``
    is with the facts at ``left_out`` left out) only saves work."""
    if marks is not None:
        schemas = without_positions(marks.of("schemas", _schemas), left_out or [])
    else:
        schemas = list(compress(range(len(snap)), _schemas(snap)))
    on_demand = [n for n in schemas if ON_DEMAND_META in snap[n].block.meta]
    if not on_demand:
        return []
    if marks is not None:
        capped = without_positions(marks.of("capped", _capped), left_out or [])
        if any(CAPPED_META in snap[n].block.meta for n in capped):
            return []
    elif any(_capped(snap)):
        return []
    return on_demand
