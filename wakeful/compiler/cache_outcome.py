"""Why a model call read what it read from the prompt cache: the cache-miss taxonomy.

``diff_ledgers`` says what the windows share; only the provider's counters say what the
cache served. :func:`classify` puts the two together with the idle time between the calls:

* ``hit`` — the call read (nearly) all that the previous call had cached for it: the
  deepest prefix it repeats, unless a longer cached one would repeat but for a block
  rendered differently inside it (that is ``prefix_changed``, though the shorter prefix
  was read whole);
* ``cold_start`` — no earlier call of the agent: nothing could be read;
* ``prefix_changed`` — the windows share no cached prefix: what changed it
  (:class:`PrefixCause`): the policy (its name, version and fingerprint, before and after),
  a tool's schema (added, removed, changed), or else the first block that differs and why
  (``diff_ledgers``);
* ``ttl_expired`` — the prefix matched but the idle time passed the TTL of its entry, the
  TTL the previous call marked that prefix with (this call's mark, which adaptive TTLs may
  lengthen after a long gap, applies only to what it writes);
* ``below_minimum`` — what matched is shorter than the model's minimum cacheable prefix;
* ``beyond_lookback`` — an entry the previous call wrote still matches, within its TTL, but
  it ends too many content blocks before the nearest breakpoint at or after it: the
  provider looks back only so far from each breakpoint (Anthropic: 20 block boundaries,
  ``providers.cache_limits``) and at most 4 breakpoints can be placed, so it never finds
  the entry. OpenAI matches any cached prefix: never this class there;
* ``provider_eviction`` — everything matched, within its TTL by this side's clock, and the
  provider still served less: it evicted the entry early, or its clock is ahead of ours.

The previous call is the reference because every call refreshes the entries it reads and
writes: what the previous call left is what this one could find. What it could read is the
deepest entry the previous call wrote that this window repeats and the provider reaches:
one this window marks again, or one it repeats within the lookback of a breakpoint (any
repeated one on OpenAI, which matches any cached prefix). A mark on an element no block
owns (the data notice) records no token count of its own; its prefix is counted from its
neighbours (the whole window for the last one). The provider's counts are its own: a read
a little over the compiler's estimate is the whole prefix, and one far over it a longer
prefix than the ledgers show, said as such. Pure: no clock, no I/O.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from wakeful.compiler.blocks import BlockKind
from wakeful.compiler.diff import DiffReason, LedgerDiff, diff_ledgers
from wakeful.compiler.ledger import Breakpoint, Ledger

__all__ = ["TTL_SECONDS", "CacheClass", "CacheOutcome", "PrefixCause", "classify"]

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
# Reads within this share of what could be read count as a hit: the compiler's token counts
# are estimates of the provider's (``token_miscount_pct`` in the history bench).
HIT_SHARE = 0.9


class CacheClass(StrEnum):
    HIT = "hit"
    COLD_START = "cold_start"
    PREFIX_CHANGED = "prefix_changed"
    TTL_EXPIRED = "ttl_expired"
    BELOW_MINIMUM = "below_minimum"
    PROVIDER_EVICTION = "provider_eviction"
    BEYOND_LOOKBACK = "beyond_lookback"


class PrefixCause(StrEnum):
    """What changed a prefix (``prefix_changed``): the policy, before anything it caused;
    then a tool's schema (added, removed or changed); else the first differing block's
    reason from ``diff_ledgers``."""

    POLICY = "policy"
    TOOL_SCHEMA = "tool_schema"
    CONTENT = "content"
    ORDER = "order"
    ADDED = "added"
    REMOVED = "removed"
    MODEL = "model"
    PROVIDER = "provider"
    RENDERING = "rendering"


_CAUSE_OF: dict[DiffReason, PrefixCause] = {
    DiffReason.CONTENT_CHANGED: PrefixCause.CONTENT,
    DiffReason.REORDERED: PrefixCause.ORDER,
    DiffReason.ADDED: PrefixCause.ADDED,
    DiffReason.NEWLY_INCLUDED: PrefixCause.ADDED,
    DiffReason.REMOVED: PrefixCause.REMOVED,
    DiffReason.MODEL_CHANGED: PrefixCause.MODEL,
    DiffReason.PROVIDER_CHANGED: PrefixCause.PROVIDER,
    DiffReason.RENDERING_CHANGED: PrefixCause.RENDERING,
    DiffReason.IDENTICAL: PrefixCause.RENDERING,
}


class CacheOutcome(BaseModel):
    """One call's cache outcome against the call before it."""

    model_config = ConfigDict(frozen=True)

    cache_class: CacheClass
    read_tokens: int = Field(description="What the provider served from its cache.")
    could_read_tokens: int = Field(
        description="The deepest prefix the previous call cached that this window repeats "
        "at one of its breakpoints (0: none)."
    )
    through: str | None = Field(None, description="The breakpoint of that prefix.")
    idle_seconds: float | None = Field(None, description="Since the previous call.")
    ttl_seconds: float | None = Field(None, description="The TTL of that prefix's entry.")
    lookback_distance: int | None = Field(
        None,
        description="beyond_lookback: content blocks from the end of the unreachable entry "
        "to the nearest breakpoint at or after it (None: no breakpoint there).",
    )
    cause: PrefixCause | None = Field(
        None, description="prefix_changed: what changed the prefix (None: another class)."
    )
    detail: str = ""
    difference: LedgerDiff | None = Field(
        None, description="The first difference from the previous window, when it differs."
    )

    def line(self) -> str:
        """One line for a terminal."""
        return f"cache {self.cache_class.value}: {self.detail}"


def classify(
    previous: Ledger | None,
    previous_at: datetime | None,
    current: Ledger,
    at: datetime,
    *,
    read_tokens: int,
    min_cacheable: int,
    lookback: int | None = None,
) -> CacheOutcome:
    """Classify ``current``'s cache outcome (the provider served ``read_tokens``) against
    ``previous``, compiled at ``previous_at`` (None: the agent's first call). ``lookback``
    is the provider's lookback window in block boundaries (None: it has none)."""
    if previous is None or previous_at is None:
        return CacheOutcome(
            cache_class=CacheClass.COLD_START,
            read_tokens=read_tokens,
            could_read_tokens=0,
            detail=f"the agent's first call: nothing was cached yet (read {read_tokens})",
        )
    idle = max(0.0, (at - previous_at).total_seconds())
    diff = diff_ledgers(previous, current)
    # A mark a call wrote no entry at (a segment TTL of "none") neither holds nor reads one.
    previous, current = _written(previous), _written(current)
    difference = None if diff.identical else diff
    before, now = _prefix_tokens(previous), _prefix_tokens(current)
    found = _deepest_entry(previous, current, before, now, lookback)
    through, could = (found.name, found.tokens) if found is not None else (None, 0)
    # The entry's TTL is the one the previous call wrote or refreshed it with: this call's
    # own mark on the same prefix (adaptive TTLs change between wakes) only takes effect
    # for what it writes.
    ttl_name = found.ttl if found is not None else None
    ttl = TTL_SECONDS.get(ttl_name or "")
    common = {
        "read_tokens": read_tokens,
        "could_read_tokens": could,
        "through": through,
        "idle_seconds": round(idle, 1),
        "ttl_seconds": ttl,
        "difference": difference,
    }
    far = _beyond_lookback(previous, current, lookback)
    far_tokens = before[far.n] if far is not None else 0
    if (
        far is not None
        and far_tokens > could
        and read_tokens < HIT_SHARE * far_tokens
        and far_tokens >= min_cacheable
        and idle <= TTL_SECONDS.get(far.entry.ttl or "", float("inf"))
    ):
        entry, tokens = far.entry, far_tokens
        nearest = (
            f"{far.distance} blocks before the nearest breakpoint '{far.nearest}'"
            if far.nearest is not None
            else "after every breakpoint of this window"
        )
        return CacheOutcome(
            cache_class=CacheClass.BEYOND_LOOKBACK,
            read_tokens=read_tokens,
            could_read_tokens=tokens,
            through=entry.name,
            idle_seconds=round(idle, 1),
            ttl_seconds=TTL_SECONDS.get(entry.ttl or ""),
            lookback_distance=far.distance,
            detail=f"'{entry.name}' ({tokens} tokens, {entry.location}) still matches within "
            f"its TTL but ends {nearest}, beyond the provider's lookback of {lookback} "
            f"({_read_of(read_tokens, tokens)})",
            difference=difference,
        )
    lost = _rewritten_entry(previous, current, before)
    lost_tokens = before[lost] if lost is not None else 0
    if could > 0 and read_tokens >= HIT_SHARE * could:
        if lost is None or lost_tokens <= could or read_tokens >= HIT_SHARE * lost_tokens:
            return CacheOutcome(
                cache_class=CacheClass.HIT,
                detail=_hit(read_tokens, could, through),
                **common,
            )
        # The shorter prefix was read, but the previous call had cached a longer one that
        # this window would repeat block for block, had a block inside it not changed.
        cause, why = _prefix_change(previous, current, diff)
        return CacheOutcome(
            cache_class=CacheClass.PREFIX_CHANGED,
            cause=cause,
            detail=f"{_read_of(read_tokens, lost_tokens)} tokens the previous call cached "
            f"through '{previous.breakpoints[lost].name}', only as far as '{through}': {why}",
            **common,
        )
    if could == 0:
        cause, why = _prefix_change(previous, current, diff)
        shorter = (
            f" (the provider read {read_tokens} tokens of a shorter shared prefix)"
            if read_tokens
            else ""
        )
        return CacheOutcome(
            cache_class=CacheClass.PREFIX_CHANGED,
            cause=cause,
            detail=f"no cached prefix is repeated{shorter}: {why}",
            **common,
        )
    if could < min_cacheable:
        return CacheOutcome(
            cache_class=CacheClass.BELOW_MINIMUM,
            detail=f"the repeated prefix ({could} tokens through '{through}') is below the "
            f"model's minimum of {min_cacheable} cacheable tokens",
            **common,
        )
    if ttl is not None and idle > ttl:
        return CacheOutcome(
            cache_class=CacheClass.TTL_EXPIRED,
            detail=f"idle {idle:.0f} s > the {ttl_name} TTL of '{through}' "
            f"({_read_of(read_tokens, could)})",
            **common,
        )
    return CacheOutcome(
        cache_class=CacheClass.PROVIDER_EVICTION,
        detail=f"'{through}' ({could} tokens) matched within its TTL by this clock (idle "
        f"{idle:.0f} s) and the provider read {read_tokens}: it evicted the entry early or "
        "its clock is ahead",
        **common,
    )


def _read_of(read: int, of: int) -> str:
    """``read R of the N`` (``R`` below ``N``, or the whole ``N`` when the provider counted
    more than the compiler's estimate)."""
    return f"read {read} of the {of}" if read < of else f"read all {of} (the provider: {read})"


def _hit(read: int, could: int, through: str | None) -> str:
    """What a hit read, in words that hold whichever count is larger: the provider's counts
    are its own, the ledger's the compiler's estimate of them (``HIT_SHARE``)."""
    if read <= could:
        return f"read {read} of the {could} tokens cached through '{through}'"
    if read * HIT_SHARE <= could:
        return (
            f"read {read} tokens: the prefix cached through '{through}', {could} tokens by "
            "the compiler's count"
        )
    return (
        f"read {read} tokens, more than the {could} cached through '{through}': the provider "
        "matched a longer cached prefix than the ledgers show"
    )


def _written(ledger: Ledger) -> Ledger:
    """``ledger`` with only the marks its call could write or read an entry at."""
    marks = tuple(bp for bp in ledger.breakpoints if bp.ttl != "none")
    if len(marks) == len(ledger.breakpoints):
        return ledger
    return ledger.model_copy(update={"breakpoints": marks})


def _prefix_tokens(ledger: Ledger) -> list[int]:
    """Each breakpoint's prefix in tokens, never fewer than an earlier one's. A mark on an
    element no block owns (the data notice) was recorded with the framing alone: the last
    such mark (``rolling``) holds the whole window, another at least what came before."""
    owned = {r.block_id for r in ledger.included()}
    out: list[int] = []
    last = len(ledger.breakpoints) - 1
    for n, bp in enumerate(ledger.breakpoints):
        tokens = bp.prefix_tokens
        if bp.block_id not in owned and n == last and bp.name == "rolling":
            tokens = ledger.input_tokens
        out.append(max(tokens, out[-1] if out else 0))
    return out


class _Entry(NamedTuple):
    name: str  # the breakpoint that reaches it: this window's, or the previous call's
    tokens: int
    ttl: str | None  # as the previous call wrote it


def _deepest_entry(
    previous: Ledger,
    current: Ledger,
    before: list[int],
    now: list[int],
    lookback: int | None,
) -> _Entry | None:
    """The deepest entry the previous call wrote that ``current`` could read: one of its
    breakpoints repeats the entry's prefix (hash equality), or the window repeats the
    entry's blocks and a breakpoint reaches it within ``lookback`` (None: any repeated
    entry is reached). None: there is none."""
    written = {bp.prefix_hash: n for n, bp in enumerate(previous.breakpoints)}
    best: _Entry | None = None
    for n, bp in enumerate(current.breakpoints):
        w = written.get(bp.prefix_hash)
        if w is not None:  # the same prefix: the larger of the two counts of it
            entry = previous.breakpoints[w]
            best = _Entry(bp.name, max(now[n], before[w]), entry.ttl or bp.ttl)
    for n, entry, end in _repeated(previous, current):
        if before[n] <= (best.tokens if best is not None else 0):
            continue
        reach = [el - end for el in _elements(current) if el >= end]
        if lookback is None or (reach and min(reach) < lookback):
            best = _Entry(entry.name, before[n], entry.ttl)
    return best


def _repeated(previous: Ledger, current: Ledger) -> list[tuple[int, Breakpoint, int]]:
    """The previous call's breakpoints whose prefix ``current`` repeats row for row (each
    with its index and its content-block index, the same in both windows), when the two
    share provider, model and policy. The last one, on an element no block owns, is
    repeated when every included row of the previous window is."""
    if previous.provider != current.provider or previous.model != current.model:
        return []
    if previous.policy_fingerprint != current.policy_fingerprint:
        return []
    shared, first_changed = _shared_rows(previous, current)
    same = shared if first_changed is None else first_changed  # rows equal in bytes too
    whole = same == len(previous.included())
    position = {r.block_id: r.position for r in previous.included()}
    last = len(previous.breakpoints) - 1
    return [
        (n, bp, el)
        for n, (bp, el) in enumerate(zip(previous.breakpoints, _elements(previous), strict=True))
        if (bp.block_id in position and position[bp.block_id] < same)
        or (bp.block_id not in position and n == last and whole)
    ]


def _prefix_change(previous: Ledger, current: Ledger, diff: LedgerDiff) -> tuple[PrefixCause, str]:
    """What changed the prefix, and the words that say so: the first differing block and
    why, preceded by the policy change when there was one (it may have caused the rest)."""
    row = (current.row(diff.block_id) or previous.row(diff.block_id)) if diff.block_id else None
    if row is not None and row.kind == BlockKind.TOOL_SCHEMA.value:
        cause = PrefixCause.TOOL_SCHEMA
        change = {
            DiffReason.ADDED: "was added",
            DiffReason.NEWLY_INCLUDED: "was added",
            DiffReason.REMOVED: "was removed",
            DiffReason.REORDERED: "moved",
        }.get(diff.reason, "changed")
        why = f"{diff.reason.value} {diff.detail}".rstrip()
        first = (
            f"the tool schema of '{row.block_id.removeprefix('tool:')}' {change} "
            f"(block {diff.block_id}: {why})"
        )
    elif diff.block_id is not None:
        cause = _CAUSE_OF[diff.reason]
        first = (
            f"first difference at block {diff.block_id} ({diff.segment}): "
            f"{diff.reason.value} {diff.detail}".rstrip()
        )
    else:
        cause = _CAUSE_OF[diff.reason]
        first = f"{diff.reason.value} {diff.detail}".rstrip()
    if not diff.policy_changed:
        return cause, first
    policy = f"the policy changed: {_policy(previous)} -> {_policy(current)}; then {first}"
    return PrefixCause.POLICY, policy


def _policy(ledger: Ledger) -> str:
    return (
        f"{ledger.policy_name} v{ledger.policy_version} "
        f"(fingerprint {ledger.policy_fingerprint[:12]})"
    )


def _rewritten_entry(previous: Ledger, current: Ledger, tokens: list[int]) -> int | None:
    """The index of the previous call's deepest entry whose blocks ``current`` still has
    in the same order and segments, with at least one of them rendered differently (None:
    none); ``tokens``: the previous call's prefix per breakpoint (``_prefix_tokens``).

    Its prefix would have been read had that block kept its bytes: reading only a shorter
    prefix then is a changed prefix, not a hit, although the shorter one was read whole.
    """
    if previous.provider != current.provider or previous.model != current.model:
        return None
    same, first_changed = _shared_rows(previous, current)
    if first_changed is None:
        return None
    position = {r.block_id: r.position for r in previous.included()}
    inside = [
        n
        for n, bp in enumerate(previous.breakpoints)
        if first_changed <= position.get(bp.block_id, same) < same
    ]
    return max(inside, key=lambda n: tokens[n], default=None)


def _shared_rows(previous: Ledger, current: Ledger) -> tuple[int, int | None]:
    """How many leading included rows the two windows share by block and segment, and
    the position of the first of those rendered differently (None: none was)."""
    same, first_changed = 0, None
    for a_row, b_row in zip(previous.included(), current.included(), strict=False):
        if (a_row.block_id, a_row.segment) != (b_row.block_id, b_row.segment):
            break
        if first_changed is None and a_row.content_hash != b_row.content_hash:
            first_changed = same
        same += 1
    return same, first_changed


class _Unreachable(NamedTuple):
    n: int  # its place among the previous call's breakpoints
    entry: Breakpoint  # the previous call's deepest entry the current window still repeats
    nearest: str | None  # the current window's nearest breakpoint at or after its end
    distance: int | None  # content blocks from the entry's end to that breakpoint


def _elements(ledger: Ledger) -> list[int]:
    """Each breakpoint's content-block index in the request (tools, system, messages)."""
    at, out = -1, []
    for bp in ledger.breakpoints:
        at += bp.blocks_since_previous
        out.append(at)
    return out


def _beyond_lookback(
    previous: Ledger, current: Ledger, lookback: int | None
) -> _Unreachable | None:
    """The previous call's deepest breakpoint entry whose prefix ``current`` repeats and
    that no breakpoint of ``current`` reaches within ``lookback`` (None: there is none).

    The prefix repeats while the included rows agree on block, rendered bytes and segment:
    a block keeps its segment and its neighbours' merging with it only within a wake, or
    within the history of earlier wakes. Then the blocks render to the same content blocks,
    so the entry ends at the same content-block index in both windows.
    """
    if lookback is None:
        return None
    repeated = _repeated(previous, current)
    if not repeated:
        return None
    index, entry, end = max(repeated, key=lambda found: found[2])
    later = [
        (el - end, bp.name)
        for bp, el in zip(current.breakpoints, _elements(current), strict=True)
        if el >= end
    ]
    if not later:
        return _Unreachable(index, entry, None, None)
    distance, name = min(later)
    return _Unreachable(index, entry, name, distance) if distance >= lookback else None
