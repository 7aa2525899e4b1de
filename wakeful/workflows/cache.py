"""The workflow's side of pacing: keep the cache clock, look up prices, annotate the ledger.

Deterministic and I/O-free like :mod:`wakeful.workflows.pacing`: the clock is advanced from
the usage a model call reported and the breakpoints its compile returned; prices come from
:mod:`wakeful.providers.pricing`, which is a data table.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from wakeful.contracts import CallModelOut, CompileOut, LedgerAnnotations
from wakeful.providers.pricing import price_for
from wakeful.workflows.pacing import (
    CacheClock,
    CacheTtls,
    CacheWrite,
    PacingDecision,
    Rates,
    cache_ttls,
    first_call_write,
    ttl_seconds,
)

__all__ = ["NO_TTL", "WakeCache", "pacing_annotations", "rates_for", "update_clock", "wake_cache"]

NO_TTL = "none"  # the TTL of a session mark a call wrote no cache entry at


def rates_for(provider: str, model: str) -> Rates | None:
    price = price_for(provider, model)
    if price is None:
        return None
    return Rates(
        input=price.input,
        output=price.output,
        cache_read=price.cache_read,
        cache_write_5m=price.cache_write_5m,
        cache_write_1h=price.cache_write_1h,
    )


def update_clock(
    clock: CacheClock,
    provider: str,
    model: str,
    compiled: CompileOut,
    reply: CallModelOut,
    started: datetime,
) -> CacheClock:
    """The clock after one call: TTLs restart at the request's start on any read or write."""
    if not clock.kept_for(provider, model):
        # Another provider's or model's cache uses say nothing about this one's.
        clock = clock.model_copy(update={"last_used_at": None, "last_write_at": None})
    marks = {b.name: b for b in compiled.breakpoints}
    stable = marks.get("stable")
    stable_tokens = stable.prefix_tokens if stable is not None else clock.stable_tokens
    later = [b for b in compiled.breakpoints if b.name != "stable"]
    # A call that wrote no session entry (first_call_write) marks where they would be.
    unwritten = bool(later) and all(b.ttl == NO_TTL for b in later)
    written = [b for b in later if b.ttl != NO_TTL]
    session_ttl = min(
        (ttl_seconds(provider, b.ttl) for b in written),
        default=clock.session_ttl_s if unwritten else ttl_seconds(provider, None),
    )
    semi = marks.get("semi_stable")
    if compiled.fresh_tokens is not None:
        # Everything a fresh session writes: the registry and a note, the summaries, and
        # the evidence it would retrieve of this session (not the semi-stable part alone).
        fresh = compiled.fresh_tokens
    else:  # a compile recorded before it said (replays of older histories decide as then)
        fresh = semi.prefix_tokens - stable_tokens if semi is not None else clock.fresh_tokens
    cached = reply.cache_read_input_tokens + reply.cache_creation_input_tokens
    if unwritten:  # the session prefix the next call must write, not what this one cached
        session_tokens = max(max(b.prefix_tokens for b in later) - stable_tokens, 0)
    elif cached:
        session_tokens = max(cached - stable_tokens, 0)
    else:
        session_tokens = clock.session_tokens
    return CacheClock(
        provider=provider,
        model=model,
        last_used_at=started if cached else clock.last_used_at,
        last_write_at=started if reply.cache_creation_input_tokens else clock.last_write_at,
        stable_tokens=stable_tokens,
        stable_ttl_s=(
            ttl_seconds(provider, stable.ttl) if stable is not None else clock.stable_ttl_s
        ),
        session_tokens=session_tokens,
        session_ttl_s=session_ttl,
        fresh_tokens=max(fresh, 0),
        fresh_evidence_tokens=(
            compiled.fresh_evidence_tokens
            if compiled.fresh_evidence_tokens is not None
            else clock.fresh_evidence_tokens
        ),
        gaps=clock.gaps,
        written=clock.written,
        wake_written=clock.wake_written + reply.cache_creation_input_tokens,
        added=clock.added,
        wake_rewrite=clock.wake_rewrite,
        calls=clock.calls,
        wake_calls=clock.wake_calls + 1,
        session_written=not unwritten,
    )


class WakeCache(NamedTuple):
    """A wake's prompt-cache plan: the TTLs of its calls, those of its first call, and
    whether that first call writes the session's entries (and why)."""

    ttls: CacheTtls
    first: CacheTtls
    write: CacheWrite


def wake_cache(
    clock: CacheClock,
    rates: Rates | None,
    at: datetime,
    *,
    added_only: bool = True,
) -> WakeCache:
    """The TTLs pacing chooses for a wake starting ``at`` (:func:`cache_ttls`) and whether
    its first call writes the session prefix (:func:`first_call_write`)."""
    ttls = cache_ttls(clock, rates, added_only=added_only)
    write = first_call_write(clock, ttls, at, rates)
    first = ttls if write.write else ttls.without_session_writes()
    return WakeCache(ttls=ttls, first=first, write=write)


def pacing_annotations(
    decision: PacingDecision,
    session: str,
    notes: list[str] | None = None,
    ttls: CacheTtls | None = None,
    write: CacheWrite | None = None,
) -> LedgerAnnotations:
    """What the first compile of a wake writes into its ledger about pacing (the TTLs'
    reason too: every compile gets the TTLs, only the first the words; and whether the
    first call writes the session's cache entries)."""
    return LedgerAnnotations(
        decisions={
            "pacing": decision.choice,
            "pacing.prices_usd": decision.prices(),
            "session": session,
        }
        | ({"pacing.cache_ttl": ttls.why} if ttls is not None else {})
        | ({"pacing.cache_write": write.why} if write is not None else {}),
        notes=(decision.reason, *(notes or [])),
    )
