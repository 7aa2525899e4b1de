"""The partition's state: what the passes decide from the snapshot alone, kept from one
compile to the next (``partition.py`` brings it to a new snapshot).

The passes (select, dedupe, collapse, rank) read and write these tables, and the budget
reads them; this module imports no pass, so each pass reads alone against it. The tables
are keyed by :class:`~wakeful.compiler.facts.Facts` (hashed by identity): per tool-call id,
text and supersession key the groups' members, per block its static exclusion and ledger
row, per unit head its collapse, pair key and keep-order entry in its segment's
:class:`~wakeful.compiler.streams.Stream`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from wakeful.compiler.blocks import Segment
from wakeful.compiler.facts import CLASS_RESOLVED, Exclusion, Facts
from wakeful.compiler.ledger import LedgerRow
from wakeful.compiler.policy import WindowPolicy
from wakeful.compiler.positions import Positions
from wakeful.compiler.streams import Entry, Stream
from wakeful.compiler.tokens import TokenCounter, WorkCounts

# The reason select gives the later calls (or results) of a repeated tool-call id.
DUPLICATE = "duplicate_tool_id"

_ROW = attrgetter("row")


class Partition:
    """The per-agent, policy-specific state derived from its last snapshot (see
    ``partition.py`` for how an update redoes it)."""

    def __init__(self, policy: WindowPolicy, counter: TokenCounter) -> None:
        self.params = (policy.eviction, bool(policy.staleness.max_age_hours))
        self.eviction = policy.eviction
        self.max_age = bool(policy.staleness.max_age_hours)
        self.counter = counter
        self.work = WorkCounts()  # the cache's own counts once a compile hands them in
        # What clearing and live output derived from the last snapshot (``derive.py``).
        self.derived: Any = None
        self.clearing: Any = None  # the history clearing read last (clearing.ClearingMemo)
        self.applied: Any = None  # its answer as the pipeline applied it (pipeline._Applied)
        # Where the blocks some passes look for sit in the last snapshot (positions.py).
        self.positions = Positions()
        self.reset()

    def reset(self) -> None:
        self.facts: list[Facts] = []
        self.snap: list[Facts] = []
        self.synth: list[Facts] = []
        self.present: set[Facts] = set()
        self.tb: dict[Facts, int] = {}
        self.by_id: dict[str, Facts] = {}
        self.by_key: dict[str, dict[Facts, None]] = {}
        self.by_wake: dict[str, dict[Facts, None]] = {}
        self.current: str | None = None
        self.e0: dict[Facts, Exclusion] = {}
        self.calls: dict[str, list[Facts]] = {}
        self.results: dict[str, list[Facts]] = {}
        self.multi: dict[str, None] = {}  # tool-call ids with several calls or results
        self.sel: dict[Facts, Exclusion] = {}
        self.partner: dict[Facts, Facts] = {}
        self.wake_members: dict[Facts, None] = {}
        self.tail: dict[Facts, None] = {}
        self.texts: dict[str, list[Facts]] = {}
        self.dd: dict[Facts, Exclusion] = {}
        self.keys: dict[str, list[Facts]] = {}
        self.sup: dict[Facts, Exclusion] = {}
        self.tangled: dict[str, None] = {}
        self.sup_t: dict[Facts, Exclusion] = {}
        self.excluded: dict[Facts, Exclusion] = {}
        self.rows: dict[Facts, LedgerRow] = {}
        self.collapsed: dict[Facts, tuple[str, int]] = {}
        self.resolved: dict[Facts, None] = {}
        self.pair_key: dict[Facts, float] = {}
        self.mandatory: dict[Facts, None] = {}
        self.fresh: dict[Facts, None] = {}
        self.minrel: dict[Facts, None] = {}
        self.entries: dict[Facts, Entry] = {}
        self.streams: dict[tuple[Segment, int], Stream] = {}
        # Tokens of every live candidate entry, per segment (``history.py`` measures
        # positions in the history from it).
        self.totals: dict[Segment, int] = {}
        self.nan: dict[Facts, None] = {}  # candidate heads whose entry key is NaN
        self.nan_keys: dict[Facts, None] = {}  # blocks whose own rank key is NaN
        self.serial = 0
        self._rows: list[LedgerRow] | None = None
        self._stale_rows: dict[Facts, None] = {}
        self.steady = 0  # compiles in a row whose blocks were those of the one before
        self.edited = False  # the last change of blocks lay in one stretch (one_edit)
        self._pos: dict[Facts, int] | None = None
        self.clear_dirty()

    def clear_dirty(self) -> None:
        self.dirty_pairs: dict[str, None] = {}
        self.dirty_texts: dict[str, None] = {}
        self.dirty_keys: dict[str, None] = {}
        self.tangled_dirty = False
        self.units: dict[Facts, None] = {}

    # -- what passes ask ------------------------------------------------------------------

    def touch(self, f: Facts) -> None:
        self.units[f] = None
        self.work.entries_touched += 1

    def position(self) -> dict[Facts, int]:
        if self._pos is None:
            self._pos = dict(zip(self.facts, range(len(self.facts)), strict=True))
        return self._pos

    def lasting_position(self) -> dict[Facts, int] | None:
        """The position map if it is at hand or worth building: the blocks were the same
        last compile too, or changed in one place (``membership.one_edit`` moves the map
        with them), so it will likely serve the next ones (else None)."""
        if self._pos is not None or self.steady >= 1 or self.edited:
            return self.position()
        return None

    def klass(self, f: Facts) -> int:
        return CLASS_RESOLVED if f in self.resolved else f.klass

    def cost(self, f: Facts) -> int:
        """Tokens of the unit headed by ``f`` (both halves of a pair; collapsed if so)."""
        c = self.collapsed.get(f)
        tokens = c[1] if c is not None else f.tokens
        other = self.partner.get(f)
        if other is not None:
            c = self.collapsed.get(other)
            tokens += c[1] if c is not None else other.tokens
        return tokens

    def base_rows(self) -> list[LedgerRow]:
        """Every block's row unless this compile decides otherwise, in snapshot order."""
        rows, stale = self._rows, self._stale_rows
        if rows is not None and stale:
            if len(stale) > 16:
                rows = None
            else:
                pos = self.lasting_position()
                for f in stale:
                    if f in self.present:
                        at = pos[f] if pos is not None else self.facts.index(f)
                        rows[at] = self.rows.get(f, f.row)
        if rows is None:
            rows = list(map(self.rows.get, self.facts, map(_ROW, self.facts)))
        self._rows = rows
        self._stale_rows = {}
        return rows

    def forget_reads(self) -> None:
        """Drop what the streams kept of earlier reads (they are read afresh next time)."""
        for stream in self.streams.values():
            stream.restart()

    def base_rows_stale(self, f: Facts) -> None:
        """``f``'s row changed: patch it into the base rows when they are next read."""
        self._stale_rows[f] = None


def registered(part: Partition, f: Facts) -> bool:
    """In play for the passes: present, not gated by a trigger, not a duplicate tool id."""
    if f not in part.present or f in part.e0:
        return False
    why = part.sel.get(f)
    return why is None or why.reason != DUPLICATE
