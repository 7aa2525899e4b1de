"""Per-block facts and the per-compile working set the passes share.

A compile over 100k blocks cannot afford a pydantic object, or even a Python ``__init__``,
per block per pass. Each block is summarised once into a :class:`Facts` record (its cost,
segment, flags and static rank key), memoised in the caller's
:class:`~wakeful.compiler.tokens.CountingCache` by block identity; passes then work on
integer indices into the facts list and record decisions in small dicts. Facts depend only
on the block, the token counter and the ranking policy (the cache namespace), never on
``now``, the goal or the rest of the snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from wakeful.compiler.blocks import Block, BlockKind, Goal, Segment, Snapshot, Stability
from wakeful.compiler.framing import (
    CONVERSATION_FRAME,
    LINE_OVERHEAD,
    canonical_json,
    evidence_group,
    group_line,
    wrapper_text,
)
from wakeful.compiler.policy import Policy, Ranking
from wakeful.compiler.tokens import CountingCache, TokenCounter

# A block's framing (role markers, content-block JSON) beyond its text; see costs in README.
BLOCK_OVERHEAD = 6
# Fixed framing of a request: the data notice, section joins, the history-gap line.
REQUEST_OVERHEAD = 96

EVENT_KINDS = frozenset(
    {BlockKind.TURN, BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT, BlockKind.CURRENT_ASK}
)

# Flag bits; a block with none set takes the fast path in every pass.
EVENT = 1
PAIRED = 2
SUPERSEDES = 4
STALE_AFTER = 8
LOAD_BEARING = 16
RESOLVED = 32
DEDUPE = 64
CAPTURED = 128
SPECIAL = PAIRED | SUPERSEDES | STALE_AFTER | LOAD_BEARING | RESOLVED | DEDUPE

# Eviction classes, lowest evicted first (DESIGN.md order; superseded blocks never compete).
CLASS_STALE = 0
CLASS_RESOLVED = 1
CLASS_OPTIONAL = 2
CLASS_NORMAL = 3


def segment_of(block: Block) -> Segment:
    """The segment a block competes in; an explicit ``stability`` may promote it."""
    kind = block.kind
    if kind is BlockKind.TOOL_SCHEMA:
        return Segment.STABLE
    if kind is BlockKind.TOOL_RESULT and block.tool_call_id is None:
        return Segment.EVIDENCE  # fresh tool output without a call: evidence, not a turn
    if kind in EVENT_KINDS or block.stability is None:
        return block.segment
    if block.stability is Stability.STABLE:
        return Segment.STABLE
    if block.stability is Stability.SEMI_STABLE:
        return Segment.SUMMARIES if kind is BlockKind.SUMMARY else Segment.SEMI_STABLE
    seg = block.segment
    return Segment.EVIDENCE if seg in (Segment.STABLE, Segment.SEMI_STABLE) else seg


def wrapping(block: Block, segment: Segment) -> str:
    if segment is Segment.EVIDENCE:
        return "evidence"
    if segment is Segment.SUMMARIES or (
        segment is Segment.SEMI_STABLE and block.kind is not BlockKind.TOOL_SCHEMA
    ):
        return "section"
    return ""


def static_rank_key(block: Block, ranking: Ranking) -> float:
    """log2 score up to a per-snapshot constant: w_r·seq/h + w_i·log2(imp+f) + w_v·log2(rel+f)."""
    imp = min(max(block.importance, 0.0), 1.0) + ranking.floor
    rel = min(max(block.relevance, 0.0), 1.0) + ranking.floor
    return (
        ranking.recency_weight * block.seq / ranking.half_life_events
        + ranking.importance_weight * math.log2(imp)
        + ranking.relevance_weight * math.log2(rel)
    )


class Facts:
    """Immutable-by-convention summary of one block (see module docstring).

    Besides the block's cost, flags and rank key it holds lazily filled memos that are pure
    functions of the block within one cache namespace: ``digest`` (Block.hash), ``row``
    (its ledger row when out-ranked), ``note`` (its collapsed-output note).
    """

    __slots__ = (
        "block",
        "digest",
        "entry",
        "flags",
        "group",
        "id",
        "key",
        "kind_s",
        "klass",
        "note",
        "pair",
        "row",
        "seg_s",
        "segment",
        "seq",
        "tokens",
        "ts",
        "unit",
        "wake",
    )

    def __init__(self, block: Block, tokens: int, segment: Segment, key: float) -> None:
        kind = block.kind
        flags = 0
        if kind in EVENT_KINDS:
            flags |= EVENT
        elif kind is not BlockKind.TOOL_SCHEMA:
            flags |= DEDUPE
        if block.tool_call_id is not None and kind in (BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT):
            flags |= PAIRED
        if block.supersession_key is not None:
            flags |= SUPERSEDES
        if block.stale_after is not None:
            flags |= STALE_AFTER
        if block.captured_at is not None:
            flags |= CAPTURED
        if block.load_bearing:
            flags |= LOAD_BEARING
        if block.resolved and kind in (BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT):
            flags |= RESOLVED
        self.block = block
        self.id = block.id
        self.seq = block.seq
        self.tokens = tokens
        self.segment = segment
        self.seg_s = segment.value
        self.kind_s = kind.value
        self.key = key
        self.flags = flags
        self.klass = CLASS_OPTIONAL if block.optional else CLASS_NORMAL
        self.pair = block.tool_call_id if flags & PAIRED else None
        self.wake = block.wake_id if flags & EVENT else None
        self.ts = block.captured_at.timestamp() if block.captured_at else float("-inf")
        # The date line a retrieved turn shares (see framing.evidence_group).
        self.group = evidence_group(block) if segment is Segment.EVIDENCE else None
        # Keep-order sort key (smallest first); ids are unique, so ties never reach past it.
        self.entry = (-self.klass, -key, -self.seq, self.id)
        self.digest = ""
        self.row: Any = None  # a LedgerRow; typed loosely to keep work.py free of ledger.py
        self.note: tuple[int, str, int] | None = None
        # (partner facts, class, collapsed tokens) -> keep-order key and cost of the pair
        self.unit: tuple[Any, int, int, tuple[int, float, int, str], int] | None = None


def block_cost(
    block: Block, segment: Segment, counts: dict[str, int], counter: TokenCounter
) -> int:
    """Tokens a block costs once rendered: body (memoised) + tool fields + framing.

    A retrieved turn that shares the conversation frame costs its line; the frame and the
    date lines are charged to the first turns admitted (:meth:`Work.opening_cost`).
    """
    text = block.text
    tokens = counts.get(text)
    if tokens is None:
        tokens = counts[text] = counter.count(text)
    if segment is Segment.EVIDENCE and evidence_group(block) is not None:
        return tokens + LINE_OVERHEAD
    tokens += BLOCK_OVERHEAD
    if block.tool_name:
        tokens += counter.count(block.tool_name)
    if block.tool_input is not None:
        tokens += counter.count(canonical_json(block.tool_input))
    wrapped_as = wrapping(block, segment)
    if wrapped_as:
        tokens += counter.count(wrapper_text(block, wrapped_as))
    return tokens


def make_facts(
    block: Block, counts: dict[str, int], counter: TokenCounter, ranking: Ranking
) -> Facts:
    segment = segment_of(block)
    return Facts(
        block, block_cost(block, segment, counts, counter), segment, static_rank_key(block, ranking)
    )


def facts_of(
    blocks: tuple[Block, ...], cache: CountingCache, counter: TokenCounter, ranking: Ranking
) -> list[Facts]:
    """Facts for every block, reusing the cache's entries for blocks seen before."""
    table = cache.facts_table((counter.name, *ranking.model_dump().values()))
    # Each entry's Facts holds its block, so the block stays alive and no other live object
    # can have its id: an id hit is an identity hit.
    out: list[Facts | None] = list(map(table.get, map(id, blocks)))
    if None in out:
        counts = cache.counts_for(counter)
        for n, facts in enumerate(out):
            if facts is None:
                block = blocks[n]
                out[n] = table[id(block)] = make_facts(block, counts, counter, ranking)
    return out  # type: ignore[return-value]


class Exclusion(NamedTuple):
    """Why a block is out: a reason code, the policy path that decided, and detail."""

    reason: str
    rule: str
    detail: str = ""


@dataclass(slots=True)
class Work:
    """The mutable scratch of one compile; never escapes :func:`compile_window`.

    ``facts`` holds the snapshot's blocks followed by synthetic ones (agent instructions,
    trigger rules, a synthetic ask). Passes append to ``excluded``/``admitted``; an index
    that is in neither when the budget pass ends was out-ranked.
    """

    snapshot: Snapshot
    goal: Goal
    policy: Policy
    now: datetime
    counter: TokenCounter
    cache: CountingCache
    facts: list[Facts]
    n_snapshot: int = 0
    tail: list[int] = field(default_factory=list)
    pools: dict[Segment, list[int]] = field(default_factory=dict)
    partner: dict[int, int] = field(default_factory=dict)
    mandatory: list[int] = field(default_factory=list)
    excluded: dict[int, Exclusion] = field(default_factory=dict)
    stale: dict[int, bool] = field(default_factory=dict)
    collapsed: dict[int, tuple[str, int]] = field(default_factory=dict)
    pair_key: dict[int, float] = field(default_factory=dict)
    lists: dict[str, list[int]] = field(default_factory=dict)
    injected: dict[int, str] = field(default_factory=dict)
    admitted: dict[int, str] = field(default_factory=dict)
    class_override: dict[int, int] = field(default_factory=dict)
    placed: list[int] = field(default_factory=list)
    instructions: int = -1
    tail_seq: int = 0
    usable: int = 0
    # Retrieved turns share one frame with a date line per group: group -> line tokens, and
    # the groups the budget has opened (charged) so far.
    frames: dict[str, int] = field(default_factory=dict)
    opened: set[str] = field(default_factory=set)

    @property
    def pool(self) -> list[int]:
        """Every candidate unit head outside the current wake, segment by segment."""
        return [idx for seg in self.pools for idx in self.pools[seg]]

    def add_synthetic(self, block: Block) -> int:
        counts = self.cache.counts_for(self.counter)
        self.facts.append(make_facts(block, counts, self.counter, self.policy.ranking))
        return len(self.facts) - 1

    def exclude(self, idx: int, why: Exclusion) -> None:
        """Exclude a block and, if it is half of a tool pair, its other half too."""
        if idx in self.excluded:
            return
        self.excluded[idx] = why
        other = self.partner.get(idx)
        if other is not None and other not in self.excluded:
            self.excluded[other] = Exclusion(
                why.reason, why.rule, f"pair of {self.facts[idx].id}: {why.detail}".rstrip(": ")
            )

    def opening_cost(self, idx: int, opened: Collection[str]) -> int:
        """Tokens admitting ``idx`` adds beyond its own cost, given the groups ``opened``
        so far: its group's date line, and the shared conversation frame if it is the first
        retrieved turn of all. 0 for blocks outside groups and for open groups."""
        group = self.facts[idx].group
        if group is None or group in opened:
            return 0
        line = self.frames.get(group)
        if line is None:
            line = self.frames[group] = self._count(group_line(self.facts[idx].block))
        if opened:
            return line
        return line + self._count(CONVERSATION_FRAME) + BLOCK_OVERHEAD

    def _count(self, text: str) -> int:
        counts = self.cache.counts_for(self.counter)
        tokens = counts.get(text)
        if tokens is None:
            tokens = counts[text] = self.counter.count(text)
        return tokens

    def cost(self, idx: int) -> int:
        """Current cost of a unit head (both halves of a pair; collapsed where collapsed)."""
        c = self.collapsed.get(idx)
        tokens = c[1] if c is not None else self.facts[idx].tokens
        other = self.partner.get(idx)
        if other is not None:
            c2 = self.collapsed.get(other)
            tokens += c2[1] if c2 is not None else self.facts[other].tokens
        return tokens
