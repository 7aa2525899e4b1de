"""``diff_ledgers``: why did the cache miss on turn 22?

Walks two ledgers' included rows in window order and names the first block that differs,
its segment and why (added, removed with the rule that removed it, content changed,
reordered), and compares breakpoint prefix hashes to say up to which breakpoint the second
window could have been served from the first one's cache entries.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from wakeful.compiler.ledger import Ledger, LedgerRow


class DiffReason(StrEnum):
    IDENTICAL = "identical"
    PROVIDER_CHANGED = "provider_changed"
    MODEL_CHANGED = "model_changed"
    ADDED = "added"
    NEWLY_INCLUDED = "newly_included"
    REMOVED = "removed"
    CONTENT_CHANGED = "content_changed"
    REORDERED = "reordered"
    RENDERING_CHANGED = "rendering_changed"


class LedgerDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    identical: bool
    reason: DiffReason
    position: int | None = None
    block_id: str | None = None
    segment: str | None = None
    detail: str = ""
    policy_changed: bool = False
    cache_hit_through: str | None = None
    cached_prefix_tokens: int = 0

    @property
    def cache_could_hit(self) -> bool:
        return self.cache_hit_through is not None


def _cache(a: Ledger, b: Ledger) -> tuple[str | None, int]:
    """The deepest breakpoint of ``b`` whose prefix ``a`` also wrote (hash equality)."""
    written = {bp.prefix_hash for bp in a.breakpoints}
    hit: tuple[str | None, int] = (None, 0)
    for bp in b.breakpoints:
        if bp.prefix_hash in written:
            hit = (bp.name, bp.prefix_tokens)
    return hit


def _explain(
    a_row: LedgerRow | None,
    b_row: LedgerRow | None,
    a_rows: dict[str, LedgerRow],
    b_rows: dict[str, LedgerRow],
) -> tuple[DiffReason, LedgerRow, str]:
    """Why the rows at one window position differ (at least one of them exists)."""
    if a_row is not None:
        later = b_rows.get(a_row.block_id)
        if later is None:
            return DiffReason.REMOVED, a_row, "no longer in the snapshot"
        if later.position < 0:
            why = f"excluded: {later.reason} ({later.rule}) {later.detail}".rstrip()
            return DiffReason.REMOVED, a_row, why
        if b_row is None:
            return DiffReason.REORDERED, a_row, f"moved to position {later.position}"
    assert b_row is not None
    if a_row is not None and a_row.block_id == b_row.block_id:
        return DiffReason.CONTENT_CHANGED, b_row, f"{a_row.content_hash} -> {b_row.content_hash}"
    earlier = a_rows.get(b_row.block_id)
    if earlier is None:
        return DiffReason.ADDED, b_row, f"new block ({b_row.reason})"
    if earlier.position < 0:
        return DiffReason.NEWLY_INCLUDED, b_row, f"was excluded: {earlier.reason} ({earlier.rule})"
    return DiffReason.REORDERED, b_row, f"moved from position {earlier.position}"


def diff_ledgers(a: Ledger, b: Ledger) -> LedgerDiff:
    """Compare the window ``a`` (earlier call) with ``b`` (later call)."""
    through, tokens = _cache(a, b)
    common = {
        "policy_changed": a.policy_fingerprint != b.policy_fingerprint,
        "cache_hit_through": through,
        "cached_prefix_tokens": tokens,
    }
    if a.window_hash == b.window_hash:
        return LedgerDiff(identical=True, reason=DiffReason.IDENTICAL, **common)
    for before, after, reason in (
        (a.provider, b.provider, DiffReason.PROVIDER_CHANGED),
        (a.model, b.model, DiffReason.MODEL_CHANGED),
    ):
        if before != after:
            detail = f"{before} -> {after}"
            return LedgerDiff(identical=False, reason=reason, position=0, detail=detail, **common)
    a_in, b_in = a.included(), b.included()
    a_rows = {r.block_id: r for r in a.rows}
    b_rows = {r.block_id: r for r in b.rows}
    for n in range(max(len(a_in), len(b_in))):
        a_row = a_in[n] if n < len(a_in) else None
        b_row = b_in[n] if n < len(b_in) else None
        if (
            a_row is not None
            and b_row is not None
            and (a_row.block_id, a_row.content_hash) == (b_row.block_id, b_row.content_hash)
        ):
            continue
        reason, row, detail = _explain(a_row, b_row, a_rows, b_rows)
        return LedgerDiff(
            identical=False,
            reason=reason,
            position=n,
            block_id=row.block_id,
            segment=row.segment,
            detail=detail,
            **common,
        )
    return LedgerDiff(
        identical=False,
        reason=DiffReason.RENDERING_CHANGED,
        detail="same blocks, different bytes (renderer, policy or breakpoints)",
        **common,
    )
