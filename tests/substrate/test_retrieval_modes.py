"""Which rankings retrieval runs: chosen by the embedder, explicit in the config, recorded."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.substrate.retrieval_store import Turn, embedded, filled
from wakeful.substrate.embedders import Embedder, HashingEmbedder, is_lexical
from wakeful.substrate.indexing import EventIndex, dump_hits, load_hits
from wakeful.substrate.lexical import analyze
from wakeful.substrate.retrieval import RetrievalConfig, Retriever, default_mode
from wakeful.substrate.vectors.base import (
    CollectionSpec,
    FusionMode,
    SeqKey,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorStore,
)
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore

DAY = datetime(2026, 5, 8, tzinfo=UTC)


class ConceptEmbedder:
    """A stand-in for a learned embedder: words of one concept share a dimension, so
    "hound" and "puppy" are close although BM25 sees nothing in common."""

    CONCEPTS = (
        ("dog", "puppi", "hound", "pup"),
        ("music", "guitar", "piano", "violin"),
        ("food", "pizza", "pasta", "lunch"),
        ("travel", "trip", "flight", "journey"),
    )

    @property
    def name(self) -> str:
        return "concepts-v1"

    @property
    def dim(self) -> int:
        return len(self.CONCEPTS) + 1

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dim
            for term in analyze(text):
                for i, words in enumerate(self.CONCEPTS):
                    if term in words:
                        vec[i] += 1.0
            vec[-1] = 0.1  # never a zero vector
            norm = sum(x * x for x in vec) ** 0.5
            out.append([x / norm for x in vec])
        return out


TURNS = [
    "Ana: We adopted a puppy from the shelter on Sunday.",
    "Ben: I practised the violin for two hours.",
    "Ana: Lunch was a pizza with olives.",
    "Ben: The flight to Lisbon left late.",
]


def fill(store: VectorStore, embedder: Embedder) -> VectorStore:
    turns = [
        Turn(
            chunk_id=f"c{i}",
            text=text,
            seq=i,
            session_id="s1",
            session_date=DAY,
            external_id=f"D1:{i + 1}",
        )
        for i, text in enumerate(TURNS)
    ]
    return filled(store, embedder, "modes", embedded(embedder, turns))


@pytest.fixture(params=["memory", "edge"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    store: VectorStore = (
        MemoryVectorStore() if request.param == "memory" else EdgeVectorStore(tmp_path / "e")
    )
    yield store
    store.close()


def top(retriever: Retriever, query: str) -> list[str | None]:
    hits = retriever.retrieve(
        query, tenant="t1", agent="a1", token_cap=1000, count_tokens=lambda t: len(t.split())
    )
    return [h.external_id for h in hits if h.neighbour_of is None]


def test_the_embedder_chooses_the_mode_unless_the_config_does() -> None:
    assert is_lexical(HashingEmbedder()) and not is_lexical(ConceptEmbedder())
    assert default_mode(HashingEmbedder()) is FusionMode.SPARSE
    assert default_mode(ConceptEmbedder()) is FusionMode.HYBRID
    store = MemoryVectorStore()
    assert Retriever(store, HashingEmbedder()).mode is FusionMode.SPARSE
    assert Retriever(store, ConceptEmbedder()).mode is FusionMode.HYBRID
    explicit = RetrievalConfig(mode=FusionMode.HYBRID)
    assert Retriever(store, HashingEmbedder(), explicit).mode is FusionMode.HYBRID


def test_a_learned_embedder_gets_dense_retrieval_that_finds_synonyms(
    backend: VectorStore,
) -> None:
    store = fill(backend, ConceptEmbedder())
    default = Retriever(store, ConceptEmbedder(), RetrievalConfig(neighbours=False))
    assert default.mode is FusionMode.HYBRID
    # No word of "hound" occurs in any turn: only the dense ranking can find the puppy.
    assert top(default, "Tell me about the hound")[0] == "D1:1"
    bm25_only = RetrievalConfig(mode=FusionMode.SPARSE, dense_fallback=False, neighbours=False)
    assert top(Retriever(store, ConceptEmbedder(), bm25_only), "Tell me about the hound") == []
    dense = RetrievalConfig(mode=FusionMode.DENSE, neighbours=False)
    assert top(Retriever(store, ConceptEmbedder(), dense), "a guitar lesson")[0] == "D1:2"


class CountingStore:
    """A VectorStore that records the modes of the queries it passes on."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.modes: list[FusionMode] = []

    @property
    def spec(self) -> CollectionSpec | None:
        return self.inner.spec

    @property
    def identity(self) -> str:
        return self.inner.identity

    def ensure_collection(self, spec: CollectionSpec, *, replace: bool = False) -> None:
        self.inner.ensure_collection(spec, replace=replace)

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        self.inner.upsert(points)

    def query(self, q: VectorQuery) -> list[VectorHit]:
        self.modes.append(q.mode)
        return self.inner.query(q)

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        return self.inner.fetch(tenant, agent, keys)

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None:
        self.inner.delete(tenant, agent, chunk_ids)

    def count(self, tenant: str, agent: str) -> int:
        return self.inner.count(tenant, agent)

    def holds(self, tenant: str, chunk_id: str) -> bool:
        return self.inner.holds(tenant, chunk_id)

    def renew_identity(self) -> str:
        return self.inner.renew_identity()

    def close(self) -> None:
        self.inner.close()


def test_sparse_mode_asks_for_dense_only_when_bm25_runs_dry(backend: VectorStore) -> None:
    emb = HashingEmbedder()
    store = CountingStore(fill(backend, emb))
    shallow = RetrievalConfig(candidates=2, tokens_per_candidate=1000, neighbours=False)
    retriever = Retriever(store, emb, shallow)
    assert retriever.mode is FusionMode.SPARSE
    # "Ana" and "pizza" match two turns: as deep as the ranking goes.
    assert top(retriever, "Ana pizza")[0] == "D1:3"
    assert store.modes == [FusionMode.SPARSE]
    store.modes.clear()
    # Nothing matches "pizzeria" lexically; the hashing vectors share its "pizz" n-grams.
    assert top(retriever, "pizzeria")[0] == "D1:3"
    assert store.modes == [FusionMode.SPARSE, FusionMode.DENSE]


def test_the_index_records_its_mode_with_every_retrieval() -> None:
    index = EventIndex(MemoryVectorStore(), HashingEmbedder(dim=64), count_tokens=len)
    assert index.mode is FusionMode.SPARSE
    hybrid = EventIndex(
        MemoryVectorStore(),
        HashingEmbedder(dim=64),
        config=RetrievalConfig(mode=FusionMode.HYBRID),
        count_tokens=len,
    )
    assert hybrid.mode is FusionMode.HYBRID
    assert load_hits(dump_hits("q", 10, [], index.mode)).mode is FusionMode.SPARSE
    # Records written before the mode was recorded still load.
    assert load_hits('{"version":1,"query":"q","token_cap":10,"hits":[]}').mode is None


def test_a_dense_share_reorders_bm25s_hits_by_meaning(backend: VectorStore) -> None:
    store = fill(backend, ConceptEmbedder())
    # Rankings two deep, which BM25's two matches fill; no smoothing, no neighbours.
    shallow = {
        "mode": FusionMode.SPARSE,
        "candidates": 2,
        "tokens_per_candidate": 1000,
        "smoothing": 0.0,
        "neighbours": False,
    }
    # "Ana" is BM25's only match, in two turns; the shorter one, about lunch, ranks first.
    bm25 = RetrievalConfig(dense_share=0.0, **shallow)
    assert top(Retriever(store, ConceptEmbedder(), bm25), "Ana and the hound") == ["D1:3", "D1:1"]
    # The dense scores, added to BM25's, say which of Ana's turns is about a dog.
    shared = RetrievalConfig(dense_share=2.0, **shallow)
    found = top(Retriever(store, ConceptEmbedder(), shared), "Ana and the hound")
    assert found == ["D1:1", "D1:3"]


def test_sparse_mode_with_a_dense_share_asks_for_dense_scores_too(backend: VectorStore) -> None:
    emb = HashingEmbedder()
    store = CountingStore(fill(backend, emb))
    shared = RetrievalConfig(
        candidates=2, tokens_per_candidate=1000, neighbours=False, dense_share=0.2
    )
    assert top(Retriever(store, emb, shared), "Ana pizza")[0] == "D1:3"
    assert store.modes == [FusionMode.SPARSE, FusionMode.DENSE]
