"""A fleet of workers on one Postgres keeps whole indexes, never a split one.

Postgres is the truth and a vector index is derived from it. Each worker with a Qdrant Edge
shard of its own keeps a full replica of what it serves, with a cursor of its own, caught
up before each retrieval; workers on one Qdrant server share its collection and one cursor.
A cursor shared by two shards would leave each holding only what it happened to index.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.substrate.test_indexing import seed, words
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.server import ServerVectorStore

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect in the local Qdrant:UserWarning"
)

QUERY = "what database do we run"


def test_workers_with_shards_of_their_own_each_hold_every_event(
    tenant: TenantStore, tmp_path: Path
) -> None:
    ids = seed(tenant)  # 6 indexable events of 7
    embedder = HashingEmbedder(dim=64)
    shards = [EdgeVectorStore(tmp_path / f"worker-{n}") for n in range(3)]
    try:
        fleet = [EventIndex(s, embedder, count_tokens=words) for s in shards]
        # Wakes land on the workers in turn, each compiling at a later horizon.
        fleet[0].catch_up(tenant, "a1", upto=ids[0])
        fleet[1].catch_up(tenant, "a1", upto=ids[3])
        fleet[2].catch_up(tenant, "a1", upto=ids[-1])
        single = EventIndex(EdgeVectorStore(tmp_path / "alone"), embedder, count_tokens=words)
        try:
            expected = single.gather(tenant, "a1", query=QUERY, max_event_id=ids[-1], token_cap=100)
        finally:
            single.close()
        for index, shard in zip(fleet, shards, strict=True):
            hits = index.gather(tenant, "a1", query=QUERY, max_event_id=ids[-1], token_cap=100)
            assert shard.count(tenant.name, "a1") == 6
            assert hits == expected
        assert len({s.identity for s in shards}) == 3
    finally:
        for s in shards:
            s.close()


def test_workers_on_one_qdrant_server_share_its_collection_and_cursor(
    tenant: TenantStore,
) -> None:
    from qdrant_client import QdrantClient

    ids = seed(tenant)
    client = QdrantClient(location=":memory:")
    try:
        embedder = HashingEmbedder(dim=64)
        first = EventIndex(ServerVectorStore(client=client), embedder, count_tokens=words)
        second = EventIndex(ServerVectorStore(client=client), embedder, count_tokens=words)
        assert first.vectors.identity == second.vectors.identity
        assert first.catch_up(tenant, "a1", upto=ids[3]) == 4
        # The second worker indexes only what the first has not: one index, one cursor.
        assert second.catch_up(tenant, "a1", upto=ids[-1]) == 2
        assert first.vectors.count(tenant.name, "a1") == 6
    finally:
        client.close()


def test_a_copied_shard_is_another_index(tenant: TenantStore, tmp_path: Path) -> None:
    """A shard directory copied for a new worker holds what the original held when copied;
    sharing the original's cursor from then on would split the two. The copy gets an
    identity of its own (bound to where it lives) and catches up through its own cursor."""
    ids = seed(tenant)
    embedder = HashingEmbedder(dim=64)
    original = EdgeVectorStore(tmp_path / "a")
    index = EventIndex(original, embedder, count_tokens=words)
    index.catch_up(tenant, "a1", upto=ids[1])
    made = original.identity
    original.close()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    a, b = EdgeVectorStore(tmp_path / "a"), EdgeVectorStore(tmp_path / "b")
    try:
        on_a = EventIndex(a, embedder, count_tokens=words)
        on_b = EventIndex(b, embedder, count_tokens=words)
        assert a.identity == made != b.identity
        on_a.catch_up(tenant, "a1", upto=ids[-1])
        on_b.catch_up(tenant, "a1", upto=ids[-1])
        assert a.count(tenant.name, "a1") == b.count(tenant.name, "a1") == 6
    finally:
        a.close()
        b.close()


def test_an_index_keeps_its_identity_until_it_is_made_anew(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    from wakeful.substrate.vectors.server import _ID_KEY

    embedder = HashingEmbedder(dim=64)
    first = EdgeVectorStore(tmp_path / "shard")
    EventIndex(first, embedder, count_tokens=words)
    made = first.identity
    first.close()
    again = EdgeVectorStore(tmp_path / "shard")
    try:
        index = EventIndex(again, embedder, count_tokens=words)
        assert again.identity == made and index.key.endswith(made)
    finally:
        again.close()
    # Another embedder rebuilds the shard: a new index, indexed through a new cursor.
    rebuilt = EdgeVectorStore(tmp_path / "shard")
    try:
        EventIndex(rebuilt, HashingEmbedder(dim=32), count_tokens=words)
        assert rebuilt.identity != made
    finally:
        rebuilt.close()

    client = QdrantClient(location=":memory:")
    try:
        server = ServerVectorStore(client=client)
        name = EventIndex(server, embedder, count_tokens=words).spec.name
        kept = server.identity
        reopened = ServerVectorStore(client=client)
        EventIndex(reopened, embedder, count_tokens=words)
        assert reopened.identity == kept
        # A collection made before collections carried an id is given one, kept from then on.
        metadata = dict(client.get_collection(name).config.metadata or {})
        client.update_collection(name, metadata=metadata | {_ID_KEY: ""})
        older = ServerVectorStore(client=client)
        EventIndex(older, embedder, count_tokens=words)
        assert older.identity not in (kept, "qdrant:")
        later = ServerVectorStore(client=client)
        EventIndex(later, embedder, count_tokens=words)
        assert later.identity == older.identity
    finally:
        client.close()


def test_a_shard_restored_at_the_same_path_elsewhere_catches_up_whole(
    tenant: TenantStore, tmp_path: Path
) -> None:
    """A copy put where the original lives (a volume restored on another machine) keeps
    the original's id. Its cursor says events are indexed that the copy never saw: the
    index notices the missing points, takes another identity and catches up whole."""
    ids = seed(tenant)
    embedder = HashingEmbedder(dim=64)
    shard = tmp_path / "shard"
    original = EdgeVectorStore(shard)
    EventIndex(original, embedder, count_tokens=words).catch_up(tenant, "a1", upto=ids[1])
    original.close()
    shutil.copytree(shard, tmp_path / "backup")
    original = EdgeVectorStore(shard)
    EventIndex(original, embedder, count_tokens=words).catch_up(tenant, "a1", upto=ids[-1])
    made = original.identity
    original.close()
    shutil.rmtree(shard)
    shutil.copytree(tmp_path / "backup", shard)  # the copy, at the original's path
    copy = EdgeVectorStore(shard)
    try:
        index = EventIndex(copy, embedder, count_tokens=words)
        assert copy.identity == made  # same path, same id: the cursor is the original's
        hits = index.gather(tenant, "a1", query=QUERY, max_event_id=ids[-1], token_cap=100)
        assert copy.count(tenant.name, "a1") == 6
        assert copy.identity != made and index.key.endswith(copy.identity)
        assert hits[0].external_id == "D2"
    finally:
        copy.close()


def test_workers_on_one_server_never_take_each_others_work_for_a_copy(
    tenant: TenantStore,
) -> None:
    """A worker on a Qdrant server finds the shared cursor moved by another worker: the
    points behind it are in the collection they share, so the identity stays."""
    from qdrant_client import QdrantClient

    ids = seed(tenant)
    client = QdrantClient(location=":memory:")
    try:
        embedder = HashingEmbedder(dim=64)
        first = EventIndex(ServerVectorStore(client=client), embedder, count_tokens=words)
        second = EventIndex(ServerVectorStore(client=client), embedder, count_tokens=words)
        assert second.catch_up(tenant, "a1", upto=ids[1]) == 2
        assert first.catch_up(tenant, "a1", upto=ids[3]) == 2
        assert second.catch_up(tenant, "a1", upto=ids[-1]) == 2
        assert first.key == second.key
    finally:
        client.close()
