"""The partition: what a compile derives from the snapshot alone, kept from one compile to
the next so that the next one redoes only what changed.

select, dedupe, collapse and rank decide things that depend on the blocks, the current
wake, the trigger outcome and the policy — never on ``now`` or the budget. Each decision
belongs to a small group: a tool-call id (``select.pair_group``), a text or a supersession
key (``dedupe``), a unit (a pair or a lone block: its collapse, pair key and keep-order
entry). :meth:`Partition.update` compares the new snapshot's facts with the previous ones
(``membership.py``), takes the blocks that left or arrived — or whose trigger outcome or
wake membership changed — out of and into their groups, and redoes only those groups and
the units they touch (``units.py``). A new snapshot is thus an incremental compile of the
last one, and the result is by construction the one a cold compile computes: a cold
compile is the same code with every block arriving at once.

Decisions are keyed by the :class:`Facts` object, not by position. Position matters only
where the pass order shows in the output (which of several calls with one id is first,
the order of tangled supersession groups, which of two stale halves is named); those rare
paths ask for :meth:`position`. When the relative order of blocks kept from the previous
snapshot changed, the partition is rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from wakeful.compiler.blocks import Segment
from wakeful.compiler.dedupe import key_group, tangled_groups, text_group
from wakeful.compiler.ledger import LedgerRow
from wakeful.compiler.membership import join, leave, members
from wakeful.compiler.policy import Policy
from wakeful.compiler.select import in_tail, pair_group, registered
from wakeful.compiler.streams import Entry, Stream
from wakeful.compiler.tokens import TokenCounter
from wakeful.compiler.units import refresh
from wakeful.compiler.work import CLASS_RESOLVED, SUPERSEDES, Exclusion, Facts

_ROW = attrgetter("row")


class Partition:
    """The per-agent, policy-specific state derived from its last snapshot (see module)."""

    def __init__(self, policy: Policy, counter: TokenCounter) -> None:
        self.params = (policy.eviction, bool(policy.staleness.max_age_hours))
        self.eviction = policy.eviction
        self.max_age = bool(policy.staleness.max_age_hours)
        self.counter = counter
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
        self._pos: dict[Facts, int] | None = None
        self._clear_dirty()

    def _clear_dirty(self) -> None:
        self.dirty_pairs: dict[str, None] = {}
        self.dirty_texts: dict[str, None] = {}
        self.dirty_keys: dict[str, None] = {}
        self.tangled_dirty = False
        self.units: dict[Facts, None] = {}

    # -- what passes ask ------------------------------------------------------------------

    def touch(self, f: Facts) -> None:
        self.units[f] = None

    def position(self) -> dict[Facts, int]:
        if self._pos is None:
            self._pos = dict(zip(self.facts, range(len(self.facts)), strict=True))
        return self._pos

    def lasting_position(self) -> dict[Facts, int] | None:
        """The position map if it is at hand or worth building: the blocks were the same
        last compile too, so it will likely serve the next ones (else None)."""
        return self._pos if self._pos is not None or self.steady < 1 else self.position()

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
                for f in stale:
                    if f in self.present:
                        rows[self.facts.index(f)] = self.rows.get(f, f.row)
        if rows is None:
            rows = list(map(self.rows.get, self.facts, map(_ROW, self.facts)))
        self._rows = rows
        self._stale_rows = {}
        return rows

    # -- update ---------------------------------------------------------------------------

    def update(
        self,
        snap: list[Facts],
        synth: list[Facts],
        current: str | None,
        triggers: Callable[[Partition], dict[Facts, Exclusion]],
    ) -> None:
        """Bring the partition to a new snapshot; ``triggers`` gives its gated blocks.

        On any exception the partition is inconsistent and must be dropped.
        """
        arrived: dict[Facts, None] = {}
        if not (snap is self.snap or snap == self.snap) or synth != self.synth:
            arrived = members(self, snap, synth)
            self.steady = 0
        else:
            self.steady += 1
        e0 = triggers(self)
        changed: dict[Facts, None] = {}
        if current != self.current:
            for wake in (self.current, current):
                if wake is not None:
                    changed.update(self.by_wake.get(wake, {}))
        if e0 != self.e0:
            for f in (*self.e0, *e0):
                if self.e0.get(f) != e0.get(f):
                    changed[f] = None
        moving = [f for f in changed if f not in arrived]
        for f in moving:
            leave(self, f)
        self.e0 = e0
        self.current = current
        for f in moving:
            join(self, f)
        for f in arrived:
            join(self, f)
        self._settle()

    def _settle(self) -> None:
        """Redo the dirty groups in pass order, then the units they touched."""
        for pair in self.dirty_pairs:
            pair_group(self, pair)
        wake_members, tail, partner = self.wake_members, self.tail, self.partner
        for f in list(self.units):
            other = partner.get(f)
            if f.wake is None and (other is None or other.wake is None):
                member = is_tail = False  # no wake at all: the common case, decided here
            else:
                member, is_tail = in_tail(self, f)
            if member != (f in wake_members):
                if member:
                    wake_members[f] = None
                else:
                    del wake_members[f]
            if is_tail != (f in tail):
                if is_tail:
                    tail[f] = None
                else:
                    del tail[f]
                if f.flags & SUPERSEDES and registered(self, f):
                    self.dirty_keys[f.block.supersession_key] = None  # type: ignore[index]
        for text in self.dirty_texts:
            text_group(self, text)
        for key in self.dirty_keys:
            key_group(self, key)
        if self.tangled_dirty:
            tangled_groups(self)
        refresh(self)
        self._clear_dirty()

    def forget_reads(self) -> None:
        """Drop what the streams kept of earlier reads (they are read afresh next time)."""
        for stream in self.streams.values():
            stream.restart()

    def base_rows_stale(self, f: Facts) -> None:
        """``f``'s row changed: patch it into the base rows when they are next read."""
        self._stale_rows[f] = None


def get_partition(
    table: Any, tenant: str, agent: str, policy: Policy, counter: TokenCounter
) -> Partition:
    """The agent's partition in a facts table, rebuilt when policy parameters changed."""
    parts: dict[tuple[str, str], Partition] = table.partitions
    part = parts.get((tenant, agent))
    if part is None or part.params != (policy.eviction, bool(policy.staleness.max_age_hours)):
        if len(parts) >= 64:
            del parts[next(iter(parts))]
        part = parts[(tenant, agent)] = Partition(policy, counter)
    part.counter = counter
    return part
