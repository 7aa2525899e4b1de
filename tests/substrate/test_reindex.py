"""A new analyzer or embedder re-indexes the event log instead of refusing the old index.

Stored vectors are kept under the embedder's and the BM25 encoder's names, both of which
carry the analyzer's version. Upgrading Wakeful to another analyzer (or switching
``WAKEFUL_EMBEDDER``) meets an index built with the old names on disk: the event index drops
it and indexes the log again from the start, on both on-disk backends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.substrate.test_indexing import seed, words
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.lexical import ANALYZER, Bm25Encoder
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.base import CollectionSpec, VectorStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.server import ServerVectorStore

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect in the local Qdrant:UserWarning"
)

OLD_ENCODER = Bm25Encoder(k1=0.9)  # another name, as an older analyzer's encoder has


class OldHashing(HashingEmbedder):
    """The hashing embedder under the name the previous analyzer's vectors were stored by."""

    @property
    def name(self) -> str:
        return "hashing-v1:d64:c3-5:w1/0.5/0.3"


def _open(kind: str, path: Path, encoder: Bm25Encoder) -> VectorStore:
    if kind == "edge":
        return EdgeVectorStore(path / "shard", encoder)
    from qdrant_client import QdrantClient

    return ServerVectorStore(client=QdrantClient(path=str(path / "qdrant")), encoder=encoder)


def test_every_stored_name_carries_the_analyzer_version() -> None:
    assert ANALYZER in Bm25Encoder().name
    assert ANALYZER in HashingEmbedder().name


@pytest.mark.parametrize("kind", ["edge", "qdrant-local-path"])
@pytest.mark.parametrize("changed", ["analyzer", "embedder", "both"])
def test_an_index_of_other_names_on_disk_is_rebuilt_from_the_log(
    kind: str, changed: str, tenant: TenantStore, tmp_path: Path
) -> None:
    ids = seed(tenant)
    new_embedder = HashingEmbedder(dim=64)
    old_embedder = OldHashing(dim=64) if changed != "analyzer" else new_embedder
    old_encoder = OLD_ENCODER if changed != "embedder" else Bm25Encoder()

    first = _open(kind, tmp_path, old_encoder)
    try:
        old = EventIndex(first, old_embedder, encoder=old_encoder, count_tokens=words)
        assert old.catch_up(tenant, "a1", upto=ids[-1]) == 6
    finally:
        first.close()

    again = _open(kind, tmp_path, Bm25Encoder())
    try:
        new = EventIndex(again, new_embedder, count_tokens=words)  # no mismatch error
        assert new.spec.embedder == new_embedder.name
        assert new.spec.sparse_encoder == Bm25Encoder().name
        assert again.count(tenant.name, "a1") == 0  # the old vectors are gone, not mixed in
        assert new.catch_up(tenant, "a1", upto=ids[-1]) == 6  # the whole log, again
        hits = new.gather(
            tenant, "a1", query="what database do we run", max_event_id=ids[-1], token_cap=100
        )
        assert hits[0].external_id == "D2"
    finally:
        again.close()

    # Reopened with the same names, the rebuilt index is kept as it is.
    third = _open(kind, tmp_path, Bm25Encoder())
    try:
        EventIndex(third, new_embedder, count_tokens=words)
        assert third.count(tenant.name, "a1") == 6
        assert third.spec == CollectionSpec(
            name=new.spec.name,
            embedder=new_embedder.name,
            dim=64,
            sparse_encoder=Bm25Encoder().name,
        )
        assert new.spec.name.startswith("events-") and new.spec.name != old.spec.name
    finally:
        third.close()


def test_an_edge_shard_of_an_older_storage_format_is_rebuilt(
    tenant: TenantStore, tmp_path: Path
) -> None:
    """The format a shard stores sparse vectors in is the other thing that needs a rebuild
    (the store's own ``ensure_collection`` still refuses it, naming the directory)."""
    ids = seed(tenant)
    embedder = HashingEmbedder(dim=64)
    first = EdgeVectorStore(tmp_path / "shard")
    try:
        assert (
            EventIndex(first, embedder, count_tokens=words).catch_up(tenant, "a1", upto=ids[-1])
            == 6
        )
    finally:
        first.close()
    (tmp_path / "shard" / "edge-format.json").write_text('{"version": 1}')
    again = EdgeVectorStore(tmp_path / "shard")
    try:
        index = EventIndex(again, embedder, count_tokens=words)
        assert again.count(tenant.name, "a1") == 0
        assert index.catch_up(tenant, "a1", upto=ids[-1]) == 6
    finally:
        again.close()


def test_two_analyzers_share_a_qdrant_server_without_dropping_each_other(
    tenant: TenantStore,
) -> None:
    """Workers of two versions on one Qdrant server (a rolling upgrade): each indexes into a
    collection of its own names, and neither drops nor mixes into the other's."""
    from qdrant_client import QdrantClient

    ids = seed(tenant)
    client = QdrantClient(location=":memory:")
    try:
        old_store = ServerVectorStore(client=client, encoder=OLD_ENCODER)
        old = EventIndex(old_store, OldHashing(dim=64), encoder=OLD_ENCODER, count_tokens=words)
        assert old.catch_up(tenant, "a1", upto=ids[-1]) == 6
        new_store = ServerVectorStore(client=client)
        new = EventIndex(new_store, HashingEmbedder(dim=64), count_tokens=words)
        assert new.catch_up(tenant, "a1", upto=ids[-1]) == 6
        # The old worker's collection is still as it created it (a plain open checks that).
        ServerVectorStore(client=client, encoder=OLD_ENCODER).ensure_collection(old.spec)
        assert old_store.count(tenant.name, "a1") == new_store.count(tenant.name, "a1") == 6
        assert old.spec.name != new.spec.name
        for index in (old, new):
            hits = index.gather(
                tenant, "a1", query="what database do we run", max_event_id=ids[-1], token_cap=100
            )
            assert hits[0].external_id == "D2"
    finally:
        client.close()
