"""The per-compile working set the passes share.

What follows from the snapshot alone (pairs, tail, duplicates, supersession, collapse,
candidates) lives in the agent's :class:`~wakeful.compiler.state.Partition`, kept from
one compile to the next; :class:`Work` holds what one compile adds on top — exclusions by
staleness, relevance floors and pressure, stale flags, and the budget's admissions — and
never escapes :func:`~wakeful.compiler.pipeline.compile_window`. Per-block facts, and the
constants passes share, are in ``facts.py`` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from wakeful.compiler.blocks import Block, Goal, Role, Segment, Snapshot
from wakeful.compiler.facts import (
    BLOCK_OVERHEAD,
    CAPTURED,
    CLASS_NORMAL,
    CLASS_OPTIONAL,
    CLASS_RESOLVED,
    CLASS_STALE,
    DEDUPE,
    EVENT,
    EVENT_KINDS,
    LOAD_BEARING,
    PAIRED,
    REPLY_PRIMING,
    RESOLVED,
    SPECIAL,
    STALE_AFTER,
    SUPERSEDES,
    Exclusion,
    Facts,
    block_cost,
    make_facts,
    rank_key,
    segment_of,
    static_rank_key,
    strict_key,
    wrapping,
)
from wakeful.compiler.framing import (
    CONVERSATION_CLOSE,
    CONVERSATION_OPEN,
    DATA_NOTICE,
    HISTORY_GAP,
    STALE_MARK,
    group_line,
)
from wakeful.compiler.lookup import FactsTable
from wakeful.compiler.policy import WindowPolicy
from wakeful.compiler.state import Partition
from wakeful.compiler.tokens import CountingCache, TokenCounter

__all__ = [
    "BLOCK_OVERHEAD",
    "CAPTURED",
    "CLASS_NORMAL",
    "CLASS_OPTIONAL",
    "CLASS_RESOLVED",
    "CLASS_STALE",
    "DEDUPE",
    "EVENT",
    "EVENT_KINDS",
    "LOAD_BEARING",
    "PAIRED",
    "REPLY_PRIMING",
    "RESOLVED",
    "SPECIAL",
    "STALE_AFTER",
    "SUPERSEDES",
    "Exclusion",
    "Facts",
    "Work",
    "block_cost",
    "make_facts",
    "rank_key",
    "segment_of",
    "static_rank_key",
    "strict_key",
    "wrapping",
]


@dataclass(slots=True)
class Work:
    """The mutable scratch of one compile; never escapes :func:`compile_window`.

    ``synthetic`` holds the blocks this compile adds after the partition's (a synthetic
    ask); the snapshot's and the agent's are ``part.facts``. What follows from the snapshot
    alone (pairs, tail, duplicates, supersession, collapse, candidates) lives in ``part``;
    the dicts here hold what this compile adds: exclusions by staleness, relevance floors
    and pressure, stale flags, and the budget's admissions. A block in neither
    ``part.excluded``, ``excluded`` nor ``admitted`` when the budget pass ends was
    out-ranked.
    """

    snapshot: Snapshot
    goal: Goal
    policy: WindowPolicy
    now: datetime
    counter: TokenCounter
    cache: CountingCache
    table: FactsTable
    part: Partition
    instructions: Facts
    injected: dict[Facts, str]
    tail: list[Facts] = field(default_factory=list)
    synthetic: list[Facts] = field(default_factory=list)
    excluded: dict[Facts, Exclusion] = field(default_factory=dict)
    stale: dict[Facts, bool] = field(default_factory=dict)
    class_override: dict[Facts, int] = field(default_factory=dict)
    admitted: dict[Facts, str] = field(default_factory=dict)
    placed: list[Facts] = field(default_factory=list)
    usable: int = 0
    overhead: int = 0  # the request's fixed framing (``fixed_overhead``)
    # Retrieved turns share one frame with a date line per group: group -> line tokens, and
    # the groups the budget has opened (charged) so far.
    frames: dict[str, int] = field(default_factory=dict)
    opened: set[str] = field(default_factory=set)
    # Why an admitted block came, in the ledger's detail (evidence admission, admission.py).
    notes: dict[Facts, str] = field(default_factory=dict)
    # Each declared layer's account for the ledger's decisions (``layers.py``).
    layers: dict[str, str] = field(default_factory=dict)

    def add_synthetic(self, block: Block) -> Facts:
        counts = self.cache.counts_for(self.counter)
        f = self.table.synthetic(block, counts, self.counter, self.policy.ranking)
        self.synthetic.append(f)
        return f

    def is_excluded(self, f: Facts) -> bool:
        return f in self.excluded or f in self.part.excluded

    def exclude(self, f: Facts, why: Exclusion) -> None:
        """Exclude a block and, if it is half of a tool pair, its other half too."""
        if self.is_excluded(f):
            return
        self.excluded[f] = why
        other = self.part.partner.get(f)
        if other is not None and not self.is_excluded(other):
            self.excluded[other] = Exclusion(
                why.reason, why.rule, f"pair of {f.id}: {why.detail}".rstrip(": ")
            )

    def klass(self, f: Facts) -> int:
        """The eviction class of a unit head: stale (this compile) > collapsed > static."""
        klass = self.class_override.get(f)
        if klass is not None:
            return klass
        return self.part.klass(f)

    def cost(self, f: Facts) -> int:
        """Current cost of a unit head (both halves of a pair; collapsed where collapsed)."""
        return self.part.cost(f)

    def opening_cost(self, f: Facts, opened: Collection[str]) -> int:
        """Tokens admitting ``f`` adds beyond its own cost, given the groups ``opened``
        so far: its group's date line, and the shared conversation frame if it is the first
        retrieved turn of all. 0 for blocks outside groups and for open groups."""
        group = f.group
        if group is None or group in opened:
            return 0
        line = self.frames.get(group)
        if line is None:
            line = self.frames[group] = self._count(group_line(f.block))
        if opened:
            return line
        frame = self._count(CONVERSATION_OPEN) + self._count(CONVERSATION_CLOSE)
        return line + frame + BLOCK_OVERHEAD

    def stale_cost(self, f: Facts) -> int:
        """What flagging ``f`` stale adds to it as rendered: ``[stale]`` before a retrieved
        turn's line, ``stale="true"`` in an evidence tag (each +1 for a token the mark may
        split off its neighbour); other segments render no mark."""
        if f.segment is not Segment.EVIDENCE:
            return 0
        if f.group is not None:
            return self._count(STALE_MARK) + 1
        return self._count(' stale="true"') + 1

    def fixed_overhead(self, may_open_with_assistant: bool) -> int:
        """The request's framing outside any block: the data notice as a block of its own
        (charged whether or not the window turns out to hold data, which is known only once
        it is rendered), the reply priming, and the history-gap line when the conversation
        may open with the assistant (history candidates, or assistant turns in the current
        wake)."""
        tokens = self._count(DATA_NOTICE) + BLOCK_OVERHEAD + REPLY_PRIMING
        if may_open_with_assistant:
            tokens += self._count(HISTORY_GAP) + BLOCK_OVERHEAD
        return tokens

    def may_open_with_assistant(self) -> bool:
        """True unless no history candidate exists and the current wake has no assistant
        content: only then can the renderer never insert the history-gap line."""
        part = self.part
        if part.totals.get(Segment.RECENT, 0) > 0:
            return True
        if any(f.segment is Segment.RECENT for f in part.mandatory):
            return True
        return any(f.is_call or f.block.role is Role.ASSISTANT for f in self.tail)

    def _count(self, text: str) -> int:
        counts = self.cache.counts_for(self.counter)
        tokens = counts.get(text)
        if tokens is None:
            tokens = counts[text] = self.counter.count(text)
        return tokens

    def position(self) -> dict[Facts, int]:
        """Window-independent index of every block (only for order-sensitive rare paths)."""
        return self.part.position()

    def current_block(self, f: Facts) -> Block:
        """The snapshot's own block behind ``f`` (facts may come from an equal block)."""
        n = self.part.position().get(f, -1)
        blocks = self.snapshot.blocks
        return blocks[n] if 0 <= n < len(blocks) else f.block
