"""A recorded call's cache outcome, read from the substrate (``wakeful explain``, the console).

The call before it is the wake's previous call, or the last call of the nearest earlier
wake; the classification itself is the compiler's (:mod:`wakeful.compiler.cache_outcome`).
"""

from __future__ import annotations

from wakeful.compiler.cache_outcome import CacheOutcome, classify
from wakeful.compiler.ledger import Ledger
from wakeful.providers.cache_limits import lookback_blocks, min_cacheable_tokens
from wakeful.substrate.records import CompileRecord
from wakeful.substrate.store import TenantStore

__all__ = ["cache_outcome_against", "cache_outcome_of", "ledger_of", "previous_compile"]


def ledger_of(ts: TenantStore, rec: CompileRecord) -> Ledger:
    """The ledger a compile recorded."""
    return Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))


def previous_compile(ts: TenantStore, agent: str, rec: CompileRecord) -> CompileRecord | None:
    """The compile before ``rec``: the wake's previous call, or the last call of the
    nearest earlier wake that made one (None: ``rec`` is the agent's first)."""
    if rec.call_index > 0:
        earlier = [c for c in ts.compiles(rec.wake_id) if c.call_index < rec.call_index]
        if earlier:
            return earlier[-1]
    wakes = ts.wakes(agent)
    numbers = {w.wake_id: w.number for w in wakes}
    number = numbers.get(rec.wake_id)
    if number is None:
        return None
    for w in sorted(wakes, key=lambda w: w.number, reverse=True):
        if w.number < number:
            compiles = ts.compiles(w.wake_id)
            if compiles:
                return compiles[-1]
    return None


def cache_outcome_of(ts: TenantStore, agent: str, rec: CompileRecord) -> CacheOutcome | None:
    """How the call compiled as ``rec`` fared in the provider's cache, and why (None: the
    call was never made, e.g. the wake stopped before it)."""
    return cache_outcome_against(ts, previous_compile(ts, agent, rec), rec)


def cache_outcome_against(
    ts: TenantStore, before: CompileRecord | None, rec: CompileRecord
) -> CacheOutcome | None:
    """``rec``'s cache outcome read against the call compiled as ``before`` (None: against
    nothing, a cold start), e.g. the call ``wakeful diff`` compares it with (None: the call
    of ``rec`` was never made)."""
    made = next((c for c in ts.model_calls(rec.wake_id) if c.call_index == rec.call_index), None)
    if made is None:
        return None
    current = ledger_of(ts, rec)
    return classify(
        ledger_of(ts, before) if before is not None else None,
        before.as_of if before is not None else None,
        current,
        rec.as_of,
        read_tokens=made.cache_read_input_tokens,
        min_cacheable=min_cacheable_tokens(current.model, current.provider),
        lookback=lookback_blocks(current.provider),
    )
