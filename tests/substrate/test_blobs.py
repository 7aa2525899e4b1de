"""Content-addressed blobs, stored one at a time or in a batch."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, select

from wakeful.compiler.blocks import content_hash
from wakeful.compiler.canonical import canonical_json
from wakeful.errors import StoreError
from wakeful.substrate import blob_chunks
from wakeful.substrate import schema as t
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


def _window(turns: int) -> str:
    """A request (canonical JSON, as windows are) whose messages grow at its end."""
    messages = [
        {"role": "user" if i % 2 else "assistant", "content": [{"type": "text", "text": t}]}
        for i, t in enumerate(f"turn {i}: " + "word " * (600 + i) for i in range(turns))
    ]
    return canonical_json({"model": "m", "system": "rules", "messages": messages})


def _chunk_rows(ts: TenantStore) -> dict[str, int]:
    with ts.unit() as uow:
        rows = uow.conn.execute(
            select(t.blobs.c.hash, func.length(t.blobs.c.content)).where(
                t.blobs.c.tenant == ts.name, t.blobs.c.kind == blob_chunks.CHUNK_KIND
            )
        )
        return {h: n for h, n in rows}


def test_windows_are_stored_in_chunks_that_later_windows_share(tenant: TenantStore) -> None:
    first, second = _window(60), _window(64)
    d1 = tenant.put_blob("window", first)
    after_first = _chunk_rows(tenant)
    (d2,) = tenant.put_blobs([("window", second)])
    added = {h: n for h, n in _chunk_rows(tenant).items() if h not in after_first}
    assert (d1, d2) == (content_hash(first), content_hash(second))
    assert (tenant.get_blob(d1), tenant.get_blob(d2)) == (first, second)
    assert len(after_first) > 3
    # The second window wrote only the chunks that cover what changed at its end.
    assert 0 < sum(added.values()) < len(second) // 4


def test_a_window_missing_a_chunk_is_reported_not_returned(tenant: TenantStore) -> None:
    digest = tenant.put_blob("window", _window(40))
    lost = sorted(_chunk_rows(tenant))[0]
    with tenant.unit() as uow:
        uow.conn.execute(
            delete(t.blobs).where(t.blobs.c.tenant == tenant.name, t.blobs.c.hash == lost)
        )
    with pytest.raises(StoreError, match=f"blob {digest} .* is damaged: its chunks {lost} are"):
        tenant.get_blob(digest)


def test_a_large_window_that_does_not_split_is_stored_whole_and_read_back(
    tenant: TenantStore,
) -> None:
    """A window long enough for chunks but with no place to split (one long message) is one
    chunk, whose hash is the window's own: it is stored whole, not as a manifest of itself."""
    text = canonical_json({"model": "m", "messages": [{"role": "user", "content": "x" * 40_000}]})
    assert blob_chunks.chunked("window", text) and len(blob_chunks.split(text)) == 1
    digest = tenant.put_blob("window", text)
    assert tenant.get_blob(digest) == text


def test_small_blobs_and_other_kinds_are_stored_whole(tenant: TenantStore) -> None:
    tenant.put_blobs([("window", _window(2)), ("ledger", _window(60))])
    assert _chunk_rows(tenant) == {}


@pytest.mark.parametrize("size", [1, 7, 64, 4096])
def test_chunks_join_to_the_text_and_end_between_array_elements(size: int) -> None:
    text = _window(30)
    chunks = blob_chunks.split(text, size)
    assert "".join(chunks) == text
    assert all(len(c) >= size and c.endswith("},{") for c in chunks[:-1])
    assert blob_chunks.split("no separators here", 4) == ["no separators here"]
