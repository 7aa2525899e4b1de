"""Per-block facts: what a compile needs to know about a block, derived once.

A compile over 100k blocks cannot afford a pydantic object, or even a Python ``__init__``,
per block per pass. Each block is summarised once into a :class:`Facts` record (its cost,
segment, flags, static rank key and ledger row), kept in the caller's
:class:`~wakeful.compiler.tokens.CountingCache` (``lookup.py`` finds it again for an equal
block). Facts depend only on the block's value, the token counter and the ranking policy,
never on ``now``, the goal or the rest of the snapshot, so every compile that sees an equal
block shares them. Passes refer to blocks by their ``Facts`` object (hashed by identity).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from wakeful.compiler.blocks import EVIDENCE_META, Block, BlockKind, Segment, Stability
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.framing import (
    evidence_group,
    evidence_line,
    wrapper_text,
)
from wakeful.compiler.ledger import EXCLUDED, LedgerRow
from wakeful.compiler.policy import Ranking
from wakeful.compiler.replies import call_arguments
from wakeful.compiler.tokens import TokenCounter
from wakeful.errors import UserError

# A block's framing (role markers, content-block JSON) beyond its text; see costs in README.
BLOCK_OVERHEAD = 6
# What every provider adds after the last message to prime the reply (OpenAI documents 3
# tokens, ``<|start|>assistant<|message|>``); the rest of a request's fixed framing is
# text the compiler renders and counts (``Work.fixed_overhead``).
REPLY_PRIMING = 3

EVENT_KINDS = frozenset(
    {BlockKind.TURN, BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT, BlockKind.CURRENT_ASK}
)
_SENT_WITH_ID = frozenset({BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT})

# Flag bits; a block with none of SPECIAL set takes the fast path in every pass.
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


class Exclusion(NamedTuple):
    """Why a block is out: a reason code, the policy path that decided, and detail."""

    reason: str
    rule: str
    detail: str = ""


# Wire names (a dict lookup costs a tenth of ``Enum.value``).
_VALUE: dict[BlockKind | Segment, str] = {e: e.value for e in (*BlockKind, *Segment)}


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


def rank_key(seq: int, importance: float, relevance: float, ranking: Ranking) -> float:
    """log2 score up to a per-snapshot constant: w_r·seq/h + w_i·log2(imp+f) + w_v·log2(rel+f)."""
    imp = min(max(importance, 0.0), 1.0) + ranking.floor
    rel = min(max(relevance, 0.0), 1.0) + ranking.floor
    return (
        ranking.recency_weight * seq / ranking.half_life_events
        + ranking.importance_weight * math.log2(imp)
        + ranking.relevance_weight * math.log2(rel)
    )


def static_rank_key(block: Block, ranking: Ranking) -> float:
    """The block's :func:`rank_key`: ranking by it is ranking by score (see ``rank.py``)."""
    return rank_key(block.seq, block.importance, block.relevance, ranking)


class Facts:
    """Immutable-by-convention summary of one block (see module docstring).

    Besides the block's cost, flags and rank key it holds memos that are pure functions of
    the block within one cache namespace: ``digest`` (Block.hash), ``note`` (its
    collapsed-output note), ``shown`` (the collapsed block as placed, with its hash) and
    ``framed`` (its evidence or section text, see ``render.base``).
    ``strict`` spells out the fields whose ``==`` is looser than their rendering (``1 ==
    1.0`` in tool input, equal instants in different zones), so that a block is only
    matched to these facts when it renders to the same bytes. (The one other such case,
    a relevance of ``-0.0``, shows only in a relevance-floor detail, which reads the
    snapshot's own block; see ``rank.min_relevance``.)
    """

    __slots__ = (
        "arguments",
        "block",
        "call_key",
        "digest",
        "fields",
        "flags",
        "framed",
        "group",
        "holds",
        "id",
        "is_call",
        "key",
        "kind_s",
        "klass",
        "note",
        "pair",
        "row",
        "seg_s",
        "segment",
        "seq",
        "shown",
        "spent",
        "strict",
        "times",
        "tokens",
        "ts",
        "wake",
        "xrow",
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
        self.fields = block.__dict__  # what an equal block must match (see facts.py)
        self.id = block.id
        self.seq = block.seq
        self.tokens = tokens
        self.segment = segment
        self.seg_s = _VALUE[segment]
        self.kind_s = _VALUE[kind]
        self.is_call = kind is BlockKind.TOOL_CALL
        self.key = key
        self.flags = flags
        self.klass = CLASS_OPTIONAL if block.optional else CLASS_NORMAL
        self.pair = block.tool_call_id if flags & PAIRED else None
        self.wake = block.wake_id if flags & EVENT else None
        self.ts = block.captured_at.timestamp() if block.captured_at else float("-inf")
        # (stale_after, captured_at) in whole microseconds since the epoch — comparing them
        # is comparing the datetimes, without datetime arithmetic on every compile — and
        # the staleness reason stale_after gives.
        stale_after = block.stale_after
        self.times = (
            micros(stale_after),
            micros(block.captured_at),
            f"stale_after {stale_after.isoformat()}" if stale_after is not None else "",
        )
        # The date line a retrieved turn shares (see framing.evidence_group).
        self.group = evidence_group(block) if segment is Segment.EVIDENCE else None
        self.strict = strict_key(block)
        self.digest = ""
        self.note: tuple[int, str, int] | None = None
        self.shown: tuple[Block, str] | None = None
        self.framed: tuple[Block, bool | None, str] | None = None
        self.arguments: tuple[Block, str] | None = None  # a call's, as sent (render.base)
        self.call_key: str | None = None  # what a call asked (live_output.call_key)
        # A wake's recorded evidence: the ids of the blocks it holds (``evidence.py``).
        self.holds: str | None = (
            block.meta.get(EVIDENCE_META)
            if kind is BlockKind.TURN and EVIDENCE_META in block.meta
            else None
        )
        # Recorded evidence of an ended wake: (the horizon it was judged for, whether it is
        # carried into later wakes), see ``evidence.carried``.
        self.spent: tuple[int, bool] | None = None
        # the last exclusion this compile made of the block, and its ledger row
        self.xrow: tuple[Any, LedgerRow] | None = None
        # The ledger row of a block the budget left out: the same every compile.
        self.row = LedgerRow(
            self.id,
            self.kind_s,
            block.source,
            self.seg_s,
            EXCLUDED,
            "budget",
            f"budget.allocations.{self.seg_s}",
            "out-ranked",
            tokens,
            tokens,
            -1,
            key,
            "",
        )

    def __repr__(self) -> str:
        return f"Facts({self.id!r})"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(value: datetime | None) -> int | None:
    """An aware datetime as whole microseconds since the epoch (exact, unlike a float)."""
    return None if value is None else (value - _EPOCH) // _MICROSECOND


def strict_key(block: Block) -> tuple[str, str] | None:
    """What blocks equal by ``==`` may still differ in as rendered (see :class:`Facts`):
    None when nothing can — no tool input beyond strings, no ``stale_after``."""
    tool_input, stale_after = block.tool_input, block.stale_after
    if stale_after is None and (tool_input is None or _strings_only(tool_input)):
        return None
    return (repr(tool_input), stale_after.isoformat() if stale_after is not None else "")


def _strings_only(value: object) -> bool:
    """Only str keys and leaves: ``==`` on such values is exact (a str equals only a str)."""
    if type(value) is str:
        return True
    if type(value) is dict:
        return all(type(k) is str and _strings_only(v) for k, v in value.items())
    if type(value) is list:
        return all(map(_strings_only, value))
    return False


def block_cost(
    block: Block, segment: Segment, counts: dict[str, int], counter: TokenCounter
) -> int:
    """Tokens a block costs once rendered: body (memoised) + tool fields + framing.

    A retrieved turn that shares the conversation frame costs its line, counted as sent
    (text and the newline that ends it: after punctuation the two are often one token);
    the frame and the date lines are charged to the first turns admitted
    (:meth:`Work.opening_cost`).
    """
    if segment is Segment.EVIDENCE and evidence_group(block) is not None:
        line = evidence_line(block.text)
        tokens = counts.get(line)
        if tokens is None:
            tokens = counts[line] = counter.count(line)
        return tokens
    text = block.text
    call = block.kind is BlockKind.TOOL_CALL and segment is not Segment.EVIDENCE
    if call:
        # A call is sent as its arguments alone (its text is their spelling: replies.py).
        text = call_arguments(block)
    tokens = counts.get(text)
    if tokens is None:
        tokens = counts[text] = counter.count(text)
    tokens += BLOCK_OVERHEAD
    if block.tool_name:
        tokens += counter.count(block.tool_name)
    if block.tool_input is not None and not call:
        tokens += counter.count(canonical_json(block.tool_input))
    if block.tool_call_id is not None and block.kind in _SENT_WITH_ID:
        if segment is not Segment.EVIDENCE:  # evidence is rendered as text, without ids
            # Both providers send the call's id with the call and with its result
            # (``tool_use.id`` / ``tool_use_id``; ``tool_calls[].id`` / ``tool_call_id``).
            tokens += counter.count(block.tool_call_id)
    wrapped_as = wrapping(block, segment)
    if wrapped_as:
        tokens += counter.count(wrapper_text(block, wrapped_as))
    return tokens


def make_facts(
    block: Block, counts: dict[str, int], counter: TokenCounter, ranking: Ranking
) -> Facts:
    segment = segment_of(block)
    return Facts(
        block,
        block_cost(block, segment, counts, counter),
        segment,
        static_rank_key(block, ranking),
    )


# How a pass derives a block from another (``clearing.py``, ``live_output.py``): the result
# is marked resolved, its ``stale_after`` dropped when the flag says so, and these meta
# entries added in this order. Hashable, so that a derived block's facts are kept by source
# and derivation (``lookup.FactsTable.derived``) rather than made again every compile.
Derivation = tuple[bool, tuple[tuple[str, str], ...]]


def derive_block(block: Block, derivation: Derivation) -> Block:
    """The block a pass shows in place of ``block``: resolved, with the derivation's meta."""
    drop_stale, meta = derivation
    update: dict[str, Any] = {"resolved": True, "meta": {**block.meta, **dict(meta)}}
    if drop_stale:
        update = {"resolved": True, "stale_after": None, "meta": update["meta"]}
    return block.model_copy(update=update)


def duplicate_ids_error(facts: list[Facts]) -> UserError:
    """The one-line error for a snapshot whose block ids repeat (ids key every decision)."""
    ids = [f.id for f in facts]
    seen: set[str] = set()
    dupes = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
    return UserError(
        f"block ids must be unique within a snapshot; repeated: {', '.join(dupes[:10])}"
    )


def digest_of(f: Facts) -> str:
    """``f.block.hash``, remembered on the facts (hashing a block reads all its text)."""
    if not f.digest:
        f.digest = f.block.hash
    return f.digest
