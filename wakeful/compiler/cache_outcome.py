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
writes: what the previous call left is what this one could find. Pure: no clock, no I/O.
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
    difference = None if diff.identical else diff
    through, could = diff.cache_hit_through, diff.cached_prefix_tokens
    # The entry's TTL is the one the previous call wrote or refreshed it with: this call's
    # own mark on the same prefix (adaptive TTLs change between wakes) only takes effect
    # for what it writes.
    ttl_name = _entry_ttl(previous, current, through)
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
    if (
        far is not None
        and read_tokens < HIT_SHARE * far.entry.prefix_tokens
        and far.entry.prefix_tokens >= min_cacheable
        and idle <= TTL_SECONDS.get(far.entry.ttl or "", float("inf"))
    ):
        entry, tokens = far.entry, far.entry.prefix_tokens
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
            f"(read {read_tokens} of {tokens})",
            difference=difference,
        )
    lost = _rewritten_entry(previous, current)
    if could > 0 and read_tokens >= HIT_SHARE * could:
        if (
            lost is None
            or lost.prefix_tokens <= could
            or read_tokens >= HIT_SHARE * (lost.prefix_tokens)
        ):
            return CacheOutcome(
                cache_class=CacheClass.HIT,
                detail=f"read {read_tokens} of the {could} tokens cached through '{through}'",
                **common,
            )
        # The shorter prefix was read, but the previous call had cached a longer one that
        # this window would repeat block for block, had a block inside it not changed.
        cause, why = _prefix_change(previous, current, diff)
        return CacheOutcome(
            cache_class=CacheClass.PREFIX_CHANGED,
            cause=cause,
            detail=f"read {read_tokens} of the {lost.prefix_tokens} tokens the previous call "
            f"cached through '{lost.name}', only as far as '{through}': {why}",
            **common,
        )
    if could == 0:
        cause, why = _prefix_change(previous, current, diff)
        return CacheOutcome(
            cache_class=CacheClass.PREFIX_CHANGED,
            cause=cause,
            detail=f"no cached prefix is repeated: {why}",
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
            f"(read {read_tokens} of {could})",
            **common,
        )
    return CacheOutcome(
        cache_class=CacheClass.PROVIDER_EVICTION,
        detail=f"'{through}' ({could} tokens) matched within its TTL by this clock (idle "
        f"{idle:.0f} s) and the provider read {read_tokens}: it evicted the entry early or "
        "its clock is ahead",
        **common,
    )


def _entry_ttl(previous: Ledger, current: Ledger, through: str | None) -> str | None:
    """The TTL of the entry ``current`` repeats through its breakpoint ``through``, as the
    previous call marked that prefix (None: no such entry, or no TTL, as on OpenAI)."""
    mark = next((bp for bp in current.breakpoints if bp.name == through), None)
    if mark is None:
        return None
    entry = next((bp for bp in previous.breakpoints if bp.prefix_hash == mark.prefix_hash), None)
    return entry.ttl if entry is not None else mark.ttl


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


def _rewritten_entry(previous: Ledger, current: Ledger) -> Breakpoint | None:
    """The previous call's deepest entry whose blocks ``current`` still has in the same
    order and segments, with at least one of them rendered differently (None: none).

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
        bp for bp in previous.breakpoints if first_changed <= position.get(bp.block_id, same) < same
    ]
    return max(inside, key=lambda bp: bp.prefix_tokens, default=None)


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
    if lookback is None or previous.provider != current.provider:
        return None
    if previous.model != current.model or previous.policy_fingerprint != current.policy_fingerprint:
        return None
    shared, first_changed = _shared_rows(previous, current)
    same = shared if first_changed is None else first_changed  # rows equal in bytes too
    position = {r.block_id: r.position for r in previous.included()}
    repeated = [
        (bp, el)
        for bp, el in zip(previous.breakpoints, _elements(previous), strict=True)
        if bp.block_id in position and position[bp.block_id] < same
    ]
    if not repeated:
        return None
    entry, end = max(repeated, key=lambda pair: pair[1])
    later = [
        (el - end, bp.name)
        for bp, el in zip(current.breakpoints, _elements(current), strict=True)
        if el >= end
    ]
    if not later:
        return _Unreachable(entry, None, None)
    distance, name = min(later)
    return _Unreachable(entry, name, distance) if distance >= lookback else None
