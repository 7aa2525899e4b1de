"""Content-addressed blobs, stored one at a time or in a batch."""

from __future__ import annotations

from wakeful.compiler.blocks import content_hash
from wakeful.substrate.store import TenantStore


def test_a_batch_returns_each_blobs_hash_in_order_and_stores_each_once(
    tenant: TenantStore,
) -> None:
    first = tenant.put_blob("policy", "same every compile")
    items = [("window", "w1"), ("policy", "same every compile"), ("ledger", "l1"), ("window", "w1")]
    digests = tenant.put_blobs(items)
    assert digests == [content_hash(text) for _, text in items]
    assert digests[1] == first
    assert [tenant.get_blob(d) for d in digests] == [text for _, text in items]
    assert tenant.put_blobs([]) == []


def test_a_blob_stored_before_is_left_as_first_written(tenant: TenantStore) -> None:
    digest = tenant.put_blob("note", "text")
    assert tenant.put_blobs([("other-kind", "text")]) == [digest]
    assert tenant.get_blob(digest) == "text"
