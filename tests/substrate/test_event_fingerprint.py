"""An event's block carries the fingerprint the compiler recognises it by: the stored
row's content hash (and its resolved flag), so a block loaded again is matched without
its text being compared, and a different row never matches."""

from __future__ import annotations

from tests.substrate.test_indexing import seed
from wakeful.substrate.snapshot import event_block
from wakeful.substrate.store import TenantStore


def test_loaded_event_blocks_carry_the_rows_content_hash(tenant: TenantStore) -> None:
    seed(tenant)
    first = [event_block(e) for e in tenant.events("a1")]
    again = [event_block(e) for e in tenant.events("a1")]
    assert [b.fingerprint for b in first] == [e.content_hash for e in tenant.events("a1")]
    assert [b.fingerprint for b in first] == [b.fingerprint for b in again]
    assert len({b.fingerprint for b in first}) == len(first)  # rows differ, so do they
    assert all(a == b and a is not b for a, b in zip(first, again, strict=True))


def test_a_resolved_event_is_fingerprinted_apart(tenant: TenantStore) -> None:
    """``resolved`` is the one flag outside the content hash that a block shows."""
    seed(tenant)
    event = tenant.events("a1")[0]
    resolved = event.model_copy(update={"resolved": True})
    assert event_block(resolved).fingerprint != event_block(event).fingerprint
