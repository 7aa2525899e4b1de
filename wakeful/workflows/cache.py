"""The workflow's side of pacing: keep the cache clock, look up prices, annotate the ledger.

Deterministic and I/O-free like :mod:`wakeful.workflows.pacing`: the clock is advanced from
the usage a model call reported and the breakpoints its compile returned; prices come from
:mod:`wakeful.providers.pricing`, which is a data table.
"""

from __future__ import annotations

from datetime import datetime

from wakeful.contracts import CallModelOut, CompileOut, LedgerAnnotations
from wakeful.providers.pricing import price_for
from wakeful.workflows.pacing import CacheClock, CacheTtls, PacingDecision, Rates, ttl_seconds

__all__ = ["pacing_annotations", "rates_for", "update_clock"]


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
    session_ttl = min(
        (ttl_seconds(provider, b.ttl) for b in later), default=ttl_seconds(provider, None)
    )
    semi = marks.get("semi_stable")
    if compiled.fresh_tokens is not None:
        # Everything a fresh session writes: the registry and a note, the summaries, and
        # the evidence it would retrieve of this session (not the semi-stable part alone).
        fresh = compiled.fresh_tokens
    else:  # a compile recorded before it said (replays of older histories decide as then)
        fresh = semi.prefix_tokens - stable_tokens if semi is not None else clock.fresh_tokens
    cached = reply.cache_read_input_tokens + reply.cache_creation_input_tokens
    return CacheClock(
        provider=provider,
        model=model,
        last_used_at=started if cached else clock.last_used_at,
        last_write_at=started if reply.cache_creation_input_tokens else clock.last_write_at,
        stable_tokens=stable_tokens,
        stable_ttl_s=(
            ttl_seconds(provider, stable.ttl) if stable is not None else clock.stable_ttl_s
        ),
        session_tokens=max(cached - stable_tokens, 0) if cached else clock.session_tokens,
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
    )


def pacing_annotations(
    decision: PacingDecision,
    session: str,
    notes: list[str] | None = None,
    ttls: CacheTtls | None = None,
) -> LedgerAnnotations:
    """What the first compile of a wake writes into its ledger about pacing (the TTLs'
    reason too: every compile gets the TTLs, only the first the words)."""
    return LedgerAnnotations(
        decisions={
            "pacing": decision.choice,
            "pacing.prices_usd": decision.prices(),
            "session": session,
        }
        | ({"pacing.cache_ttl": ttls.why} if ttls is not None else {}),
        notes=(decision.reason, *(notes or [])),
    )
