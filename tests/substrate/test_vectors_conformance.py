"""One behaviour, every backend: the VectorStore conformance suite.

Backends: the in-memory fake, Qdrant Edge (embedded), the server backend's code
(:class:`ServerVectorStore`) against qdrant-client's local engine, and the same code against a
real Qdrant server when ``QDRANT_URL`` is set (otherwise one test says it did not run, instead
of every test of the suite being reported skipped).

qdrant-client's local mode speaks the client API the server backend uses, so CI runs that
backend's whole code path. What local mode does differently, as far as this suite can see:
payload indexes (the keyword indexes and the ``is_tenant`` tenant index) have no effect —
it warns, and searches scan every point exactly, where a server uses its indexes and HNSW.
Every test of the suite passes in local mode; scale and index behaviour need the real server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from wakeful.errors import UserError
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.vectors.base import (
    CollectionSpec,
    EmbedderMismatchError,
    FusionMode,
    SeqKey,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorStore,
)
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.substrate.vectors.server import ServerVectorStore

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect in the local Qdrant:UserWarning"
)

EMBEDDER = "test-embedder"
DAY = datetime(2026, 5, 8, tzinfo=UTC)


@dataclass
class Backend:
    name: str
    spec: CollectionSpec
    reopen: Callable[[], VectorStore]
    """A new handle on the same storage (the same object where there is no other)."""


QDRANT_URL = os.environ.get("QDRANT_URL")
BACKENDS = ["memory", "edge", "qdrant-local", *(["server"] if QDRANT_URL else [])]


def test_the_real_qdrant_server_run() -> None:
    """The suite's [server] parameter runs only against a real server."""
    if not QDRANT_URL:
        pytest.skip("set QDRANT_URL to run this suite against a Qdrant server as well")
    from qdrant_client import QdrantClient

    client = QdrantClient(url=QDRANT_URL, api_key=os.environ.get("QDRANT_API_KEY"))
    try:
        client.get_collections()  # reachable: the [server] tests ran against it
    finally:
        client.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    spec = CollectionSpec(
        name=f"wk_test_{uuid.uuid4().hex[:12]}",
        embedder=EMBEDDER,
        dim=4,
        sparse_encoder=Bm25Encoder().name,
    )
    handles: list[VectorStore] = []
    if request.param == "memory":
        memory = MemoryVectorStore()
        yield Backend("memory", spec, lambda: memory)
        return
    if request.param == "edge":

        def open_edge() -> VectorStore:
            handles.append(EdgeVectorStore(tmp_path / "shard"))
            return handles[-1]

        yield Backend("edge", spec, open_edge)
    elif request.param == "qdrant-local":
        from qdrant_client import QdrantClient

        client = QdrantClient(location=":memory:")
        yield Backend("qdrant-local", spec, lambda: ServerVectorStore(client=client))
        client.close()
    else:
        url = QDRANT_URL
        assert url is not None

        def open_server() -> VectorStore:
            handles.append(ServerVectorStore(url, api_key=os.environ.get("QDRANT_API_KEY")))
            return handles[-1]

        yield Backend("server", spec, open_server)
        from qdrant_client import QdrantClient

        cleanup = QdrantClient(url=url, api_key=os.environ.get("QDRANT_API_KEY"))
        cleanup.delete_collection(spec.name)
        cleanup.close()
    for handle in handles:
        handle.close()


@pytest.fixture
def store(backend: Backend) -> VectorStore:
    s = backend.reopen()
    s.ensure_collection(backend.spec)
    return s


def pt(
    chunk_id: str,
    text: str,
    vector: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0),
    *,
    tenant: str = "t1",
    agent: str = "a1",
    seq: int = 0,
    session: str = "s1",
    kind: str = "turn",
) -> VectorPoint:
    return VectorPoint(
        tenant=tenant,
        agent=agent,
        chunk_id=chunk_id,
        text=text,
        vector=vector,
        embedder=EMBEDDER,
        seq=seq,
        session_id=session,
        session_date=DAY,
        external_id=f"ext-{chunk_id}",
        kind=kind,
    )


def q(text: str | None = None, dense: tuple[float, ...] | None = None, **kw: object) -> VectorQuery:
    mode = kw.pop("mode", None) or (
        FusionMode.HYBRID if text and dense else FusionMode.SPARSE if text else FusionMode.DENSE
    )
    return VectorQuery.model_validate(
        {
            "tenant": "t1",
            "agent": "a1",
            "mode": mode,
            "text": text,
            "dense": dense,
            "embedder": EMBEDDER if dense else None,
            **kw,
        }
    )


def ids(hits: list[VectorHit]) -> list[str]:
    return [h.chunk_id for h in hits]


CORPUS = [
    pt("c0", "I painted a sunrise over the lake", (1.0, 0.0, 0.0, 0.0), seq=0),
    pt("c1", "The dogs were running in the park", (0.0, 1.0, 0.0, 0.0), seq=1),
    pt("c2", "We adopted a puppy from the shelter", (0.0, 0.0, 1.0, 0.0), seq=2),
    pt("c3", "Painting helps me relax after work", (0.6, 0.8, 0.0, 0.0), seq=3),
]


def test_upsert_is_idempotent(store: VectorStore) -> None:
    store.upsert(CORPUS)
    first = store.query(q("painting sunrise"))
    store.upsert(CORPUS)
    assert store.count("t1", "a1") == len(CORPUS)
    assert [(h.chunk_id, round(h.score, 5)) for h in store.query(q("painting sunrise"))] == [
        (h.chunk_id, round(h.score, 5)) for h in first
    ]


def test_upsert_replaces_a_chunk_with_the_same_id(store: VectorStore) -> None:
    store.upsert(CORPUS)
    store.upsert([pt("c1", "The cats were sleeping in the sun", (0.0, 1.0, 0.0, 0.0), seq=1)])
    assert store.count("t1", "a1") == len(CORPUS)
    assert ids(store.query(q("cats sleeping"))) == ["c1"]
    assert store.query(q("dogs running")) == []


def test_payload_round_trips(store: VectorStore) -> None:
    store.upsert(CORPUS)
    (hit,) = store.query(q("puppy shelter"))
    assert (hit.chunk_id, hit.seq, hit.session_id, hit.kind) == ("c2", 2, "s1", "turn")
    assert hit.session_date == DAY
    assert hit.external_id == "ext-c2"
    assert hit.text == "We adopted a puppy from the shelter"
    assert hit.source_hash


@pytest.mark.parametrize("mode", list(FusionMode))
def test_tenant_a_never_retrieves_tenant_b(store: VectorStore, mode: FusionMode) -> None:
    store.upsert(CORPUS)
    secret = [pt(p.chunk_id, f"secret {p.text}", p.vector, tenant="t2", seq=p.seq) for p in CORPUS]
    store.upsert(secret)
    hits = store.query(q("secret painting sunrise", (1.0, 0.0, 0.0, 0.0), mode=mode, limit=50))
    assert hits and not any("secret" in h.text for h in hits)
    assert store.count("t1", "a1") == len(CORPUS)
    assert store.count("t2", "a1") == len(CORPUS)
    assert all("secret" not in h.text for h in store.fetch("t1", "a1", [SeqKey("s1", 0)]))
    store.delete("t1", "a1", ["c0", "c1"])
    assert store.count("t2", "a1") == len(CORPUS)


@pytest.mark.parametrize("mode", list(FusionMode))
def test_agents_of_one_tenant_are_isolated(store: VectorStore, mode: FusionMode) -> None:
    store.upsert([pt("x1", "the launch code is tulip", (1.0, 0.0, 0.0, 0.0), agent="a2")])
    store.upsert([pt("y1", "nothing to see here", (0.0, 1.0, 0.0, 0.0))])
    hits = store.query(q("launch code tulip", (1.0, 0.0, 0.0, 0.0), mode=mode))
    assert ids(hits) == ([] if mode is FusionMode.SPARSE else ["y1"])
    assert store.count("t1", "a2") == 1
    assert ids(store.fetch("t1", "a1", [SeqKey("s1", 0)])) == ["y1"]
    store.delete("t1", "a1", ["x1"])
    assert store.count("t1", "a2") == 1


def test_dense_ordering(store: VectorStore) -> None:
    store.upsert(CORPUS)
    hits = store.query(q(dense=(0.9, 0.1, 0.0, 0.0), limit=3))
    assert ids(hits) == ["c0", "c3", "c1"]
    assert hits[0].score > hits[1].score > hits[2].score


def test_bm25_matches_stems_and_prefers_rare_terms(store: VectorStore) -> None:
    store.upsert(CORPUS)
    store.upsert([pt(f"f{i}", f"filler about the park number {i}", seq=10 + i) for i in range(6)])
    assert set(ids(store.query(q("paint")))) == {"c0", "c3"}
    # "puppy" is in one chunk, "park" in seven: the rare word decides the ranking.
    assert ids(store.query(q("puppy park")))[0] == "c2"


def test_idf_is_computed_over_the_callers_points(store: VectorStore) -> None:
    """Another tenant's corpus must not even shift this tenant's scores."""
    store.upsert(CORPUS)
    before = [(h.chunk_id, round(h.score, 4)) for h in store.query(q("painting puppy"))]
    store.upsert([pt(f"o{i}", "puppy puppy", tenant="t2") for i in range(20)])
    after = [(h.chunk_id, round(h.score, 4)) for h in store.query(q("painting puppy"))]
    assert after == before


def test_hybrid_fuses_both_rankings(store: VectorStore) -> None:
    store.upsert(CORPUS)
    # Lexically only c2 matches; densely c1 is nearest; c3 is good in both.
    hits = store.query(q("puppy painting", (0.5, 0.85, 0.0, 0.0), limit=4))
    assert ids(hits)[0] == "c3"
    assert {"c1", "c2", "c3"} <= set(ids(hits))
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_hybrid_weights_tilt_the_fusion(store: VectorStore) -> None:
    store.upsert(CORPUS)
    # Near neighbours of the dense query keep c2 out of the dense ranking altogether.
    near = [pt(f"n{i}", "filler", (0.1 * i, 1.0, 0.1, 0.0), seq=10 + i) for i in range(1, 9)]
    store.upsert(near)
    lexical = store.query(q("puppy", (0.0, 1.0, 0.0, 0.0), weights=(5.0, 0.2), limit=2))
    dense = store.query(q("puppy", (0.0, 1.0, 0.0, 0.0), weights=(0.2, 5.0), limit=2))
    assert ids(lexical)[0] == "c2"
    assert ids(dense)[0] == "c1"


def test_session_and_kind_filters(store: VectorStore) -> None:
    store.upsert(CORPUS)
    store.upsert([pt("m1", "painting notes", session="s2", kind="memory")])
    assert ids(store.query(q("painting", sessions=("s2",)))) == ["m1"]
    assert set(ids(store.query(q("painting", kinds=("turn",))))) == {"c0", "c3"}


def test_fetch_by_session_and_seq(store: VectorStore) -> None:
    store.upsert(CORPUS)
    store.upsert([pt("z1", "other session", session="s2", seq=1)])
    got = store.fetch("t1", "a1", [SeqKey("s1", 1), SeqKey("s1", 3), SeqKey("s1", 9)])
    assert ids(got) == ["c1", "c3"]
    assert ids(store.fetch("t1", "a1", [SeqKey("s2", 1)])) == ["z1"]
    assert store.fetch("t1", "a1", []) == []


def test_delete(store: VectorStore) -> None:
    store.upsert(CORPUS)
    store.delete("t1", "a1", ["c0", "missing"])
    assert store.count("t1", "a1") == len(CORPUS) - 1
    assert "c0" not in ids(store.query(q("painting sunrise")))
    store.delete("t1", "a1", [])
    assert store.count("t1", "a1") == len(CORPUS) - 1


def test_a_query_of_stopwords_matches_nothing_lexically(store: VectorStore) -> None:
    store.upsert(CORPUS)
    assert store.query(q("what is the")) == []


def test_query_with_another_embedder_is_refused(store: VectorStore) -> None:
    store.upsert(CORPUS)
    with pytest.raises(EmbedderMismatchError, match="test-embedder"):
        store.query(q(dense=(1.0, 0.0, 0.0, 0.0), embedder="other-embedder"))
    with pytest.raises(EmbedderMismatchError, match="3-d"):
        store.query(q(dense=(1.0, 0.0, 0.0)))


def test_points_of_another_embedder_are_refused(store: VectorStore) -> None:
    alien = CORPUS[0].model_copy(update={"embedder": "other-embedder"})
    with pytest.raises(EmbedderMismatchError, match="other-embedder"):
        store.upsert([alien])
    assert store.count("t1", "a1") == 0


def test_opening_with_another_embedder_is_refused(backend: Backend, store: VectorStore) -> None:
    store.upsert(CORPUS)
    other = backend.spec.model_copy(update={"embedder": "other-embedder", "dim": 8})
    with pytest.raises(EmbedderMismatchError, match="other-embedder"):
        backend.reopen().ensure_collection(other)


def test_replace_rebuilds_a_collection_of_another_spec(store: VectorStore) -> None:
    """What the event index asks on open: derived vectors of another embedder or analyzer
    are deleted and the collection created anew, not refused and never mixed."""
    store.upsert(CORPUS)
    spec = store.spec
    assert spec is not None
    other = spec.model_copy(update={"embedder": "other-embedder", "dim": 8})
    store.ensure_collection(other, replace=True)
    assert store.spec == other
    assert store.count("t1", "a1") == 0
    point = CORPUS[0].model_copy(update={"embedder": "other-embedder", "vector": (1.0,) * 8})
    store.upsert([point])
    store.ensure_collection(other, replace=True)  # the same spec: kept as it is
    assert store.count("t1", "a1") == 1
    with pytest.raises(EmbedderMismatchError, match="other-embedder"):
        store.ensure_collection(spec)


def test_store_must_be_bound_to_a_collection_first(backend: Backend) -> None:
    fresh = backend.reopen()
    with pytest.raises(UserError, match="ensure_collection"):
        fresh.upsert(CORPUS)


def _on_disk(kind: str, path: Path) -> VectorStore:
    if kind == "edge":
        return EdgeVectorStore(path / "shard")
    from qdrant_client import QdrantClient

    return ServerVectorStore(client=QdrantClient(path=str(path / "qdrant")))


@pytest.mark.parametrize("kind", ["edge", "qdrant-local-path"])
def test_a_store_reopens_from_disk_with_its_points(kind: str, tmp_path: Path) -> None:
    """Closed and opened again: the points, the scores, and the spec check on open (which
    the server backend reads back from the collection's metadata)."""
    spec = CollectionSpec(
        name="reopen", embedder=EMBEDDER, dim=4, sparse_encoder=Bm25Encoder().name
    )
    first = _on_disk(kind, tmp_path)
    first.ensure_collection(spec)
    first.upsert(CORPUS)
    expected = [(h.chunk_id, round(h.score, 5)) for h in first.query(q("painting sunrise"))]
    first.close()
    again = _on_disk(kind, tmp_path)
    try:
        with pytest.raises(EmbedderMismatchError, match="other-embedder"):
            again.ensure_collection(spec.model_copy(update={"embedder": "other-embedder"}))
        again.ensure_collection(spec)
        assert again.count("t1", "a1") == len(CORPUS)
        assert [(h.chunk_id, round(h.score, 5)) for h in again.query(q("painting sunrise"))] == (
            expected
        )
    finally:
        again.close()


def test_equal_scores_come_back_in_chunk_id_order(store: VectorStore) -> None:
    """Ties are broken by chunk id, not by the engine's internal order (Qdrant's differs
    from one process to the next), so a wake retrieves the same evidence wherever it runs."""
    names = ["c7", "c3", "c9", "c1", "c5", "c8", "c2", "c6", "c4"]
    store.upsert([pt(n, "the quarterly budget review", seq=k) for k, n in enumerate(names)])
    assert ids(store.query(q("budget review", limit=4))) == ["c1", "c2", "c3", "c4"]
