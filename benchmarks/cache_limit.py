"""The physical limit of prompt caching over a run of windows, and where a run falls short.

For each window after the first, a token can be served from cache only if the same block
(same id, same rendered bytes) was in the previous window and its cache entry is still
alive: the time since the previous call is under the TTL of the segment it sits in. That
is the **limit**: every token is cached except those new since the previous call and those
whose TTL ran out in an idle gap. It ignores that caching works on exact prefixes.

The **prefix bound** adds the prefix rule: only blocks before the first block that differs
from the previous window (:func:`~wakeful.compiler.diff_ledgers`) can be read. The tokens
between the two are *lost to layout*: they were in the previous window, but something
earlier changed. :class:`Shortfall` adds them up by the first differing block's segment,
change and kind — that is the answer to "why did the cache miss".

Token counts here are the compiler's (ledger rows); the simulator bills its own count of
the rendered request, so compare ratios, not absolute tokens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from wakeful.compiler import Ledger, WindowPolicy, diff_ledgers

__all__ = ["CallLimit", "Shortfall", "call_limit", "segment_ttl_seconds"]

_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, "none": 0.0}  # none: not written, never read


def segment_ttl_seconds(policy: WindowPolicy, segment: str) -> float:
    """The TTL the compiler's breakpoints give a segment's cache entries."""
    cache = policy.cache
    ttl = {
        "stable": cache.stable_ttl,
        "semi_stable": cache.semi_stable_ttl,
        "summaries": cache.summaries_ttl,
    }.get(segment, cache.rolling_ttl)
    return _TTL_SECONDS[ttl]


@dataclass(frozen=True)
class CallLimit:
    """One window: its tokens, the limit, the prefix bound, and the first difference."""

    total: int
    cacheable: int
    prefix: int
    cause: str | None  # "segment:change:kind (why)" of the first differing block

    @property
    def lost_to_layout(self) -> int:
        return self.cacheable - self.prefix


def call_limit(
    prev: Ledger | None, cur: Ledger, gap_seconds: float, policy: WindowPolicy
) -> CallLimit:
    """Limit and prefix bound of window ``cur`` after ``prev``, ``gap_seconds`` later."""
    rows = cur.included()
    total = sum(r.tokens for r in rows)
    if prev is None:
        return CallLimit(total, 0, 0, "first_call")

    def alive(segment: str) -> bool:
        return gap_seconds < segment_ttl_seconds(policy, segment)

    seen = {(r.block_id, r.content_hash) for r in prev.included()}
    cacheable = sum(
        r.tokens for r in rows if (r.block_id, r.content_hash) in seen and alive(r.segment)
    )
    diff = diff_ledgers(prev, cur)
    first = len(rows) if diff.identical or diff.position is None else diff.position
    prefix = sum(r.tokens for r in rows[:first] if alive(r.segment))
    cause = None
    if not diff.identical:
        row = cur.row(diff.block_id) if diff.block_id else None
        row = row or prev.row(diff.block_id or "")
        kind = row.kind if row is not None else "?"
        cause = f"{diff.segment}:{diff.reason.value}:{kind}{_why(diff.detail)}"
    return CallLimit(total, cacheable, min(prefix, cacheable), cause)


def _why(detail: str) -> str:
    """For a removed block: did it leave the snapshot, or did a compiler rule exclude it?"""
    if detail == "no longer in the snapshot":
        return " (left the snapshot)"
    if detail.startswith("excluded: "):
        return f" (excluded: {detail.split()[1]})"
    return ""


@dataclass
class Shortfall:
    """Running totals over a run of windows."""

    total: int = 0
    cacheable: int = 0
    prefix: int = 0
    lost_by_cause: Counter[str] = field(default_factory=Counter)
    calls_by_cause: Counter[str] = field(default_factory=Counter)

    def add(self, call: CallLimit) -> None:
        self.total += call.total
        self.cacheable += call.cacheable
        self.prefix += call.prefix
        if call.lost_to_layout > 0 and call.cause is not None:
            self.lost_by_cause[call.cause] += call.lost_to_layout
            self.calls_by_cause[call.cause] += 1

    @property
    def limit_ratio(self) -> float:
        return self.cacheable / self.total if self.total else 0.0

    @property
    def prefix_ratio(self) -> float:
        return self.prefix / self.total if self.total else 0.0

    def causes(self, top: int = 6) -> list[dict[str, object]]:
        """The largest layout losses, as shares of all window tokens."""
        return [
            {
                "first_difference": cause,
                "calls": self.calls_by_cause[cause],
                "tokens": tokens,
                "share_of_window_tokens": round(tokens / self.total, 4) if self.total else 0.0,
            }
            for cause, tokens in self.lost_by_cause.most_common(top)
        ]
