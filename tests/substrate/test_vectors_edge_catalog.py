"""The Edge store's own BM25 statistics and positions stay exact through every write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from wakeful.errors import ConfigError
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.vectors.base import (
    CollectionSpec,
    FusionMode,
    SeqKey,
    VectorPoint,
    VectorQuery,
    VectorStore,
)
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.edge_catalog import bm25_idf
from wakeful.substrate.vectors.memory import MemoryVectorStore

SPEC = CollectionSpec(name="cat", embedder="e", dim=2, sparse_encoder=Bm25Encoder().name)
DAY = datetime(2026, 5, 8, tzinfo=UTC)


def pt(chunk: str, text: str, seq: int, agent: str = "a1", session: str = "s1") -> VectorPoint:
    return VectorPoint(
        tenant="t1",
        agent=agent,
        chunk_id=chunk,
        text=text,
        vector=(1.0, 0.0),
        embedder="e",
        seq=seq,
        session_id=session,
        session_date=DAY,
    )


def scores(store: VectorStore, text: str, agent: str = "a1") -> list[tuple[str, float]]:
    q = VectorQuery(tenant="t1", agent=agent, mode=FusionMode.SPARSE, text=text, limit=50)
    return [(h.chunk_id, round(h.score, 6)) for h in store.query(q)]


@contextmanager
def opened(path: Path, **kw: int) -> Iterator[EdgeVectorStore]:
    """An Edge store at ``path`` with the SPEC collection, closed when the block ends."""
    store = EdgeVectorStore(path, **kw)
    try:
        store.ensure_collection(SPEC)
        yield store
    finally:
        store.close()


def in_memory(points: list[VectorPoint]) -> MemoryVectorStore:
    """The reference: ``points`` in the in-memory store's SPEC collection."""
    memory = MemoryVectorStore()
    memory.ensure_collection(SPEC)
    memory.upsert(points)
    return memory


FIRST = [
    pt("c0", "painting a sunrise over the lake", 0),
    pt("c1", "the dogs ran in the park", 1),
    pt("c2", "a puppy from the shelter", 2),
    pt("c3", "painting helps me relax", 3),
    pt("c4", "the park was full of dogs", 4),
]


def test_statistics_follow_replacements_and_deletes(tmp_path: Path) -> None:
    with opened(tmp_path / "live") as live:
        live.upsert(FIRST)
        assert scores(live, "painting dogs")  # statistics now loaded for (t1, a1)
        live.upsert([pt("c1", "a quiet evening of painting", 1)])  # replaces c1
        live.upsert([pt("c5", "dogs again in the park", 5)])
        live.delete("t1", "a1", ["c0"])
        final = [p for p in FIRST if p.chunk_id not in {"c0", "c1"}]
        final += [pt("c1", "a quiet evening of painting", 1), pt("c5", "dogs again in the park", 5)]
        with opened(tmp_path / "fresh") as fresh:
            fresh.upsert(final)
            memory = in_memory(final)
            for text in ("painting dogs", "park puppy", "sunrise", "quiet evening"):
                expected = sorted(scores(memory, text))
                assert sorted(scores(live, text)) == expected
                assert sorted(scores(fresh, text)) == expected


def test_scores_are_bm25_over_the_callers_points_only(tmp_path: Path) -> None:
    with opened(tmp_path / "s") as store:
        store.upsert(FIRST)
        store.upsert([pt(f"o{i}", "puppy puppy", i, agent="a2") for i in range(20)])
        ((chunk, score),) = scores(store, "puppy")
        # One of a1's five points holds "puppy"; a2's twenty do not count.
        weight = Bm25Encoder().encode_document("a puppy from the shelter").values[0]
        assert chunk == "c2" and score == round(weight * bm25_idf(5, 1), 6)


def test_fetch_follows_moves_and_deletes(tmp_path: Path) -> None:
    with opened(tmp_path / "s") as store:
        store.upsert(FIRST)
        assert [h.chunk_id for h in store.fetch("t1", "a1", [SeqKey("s1", 1)])] == ["c1"]
        store.upsert([pt("c1", "the dogs ran in the park", 7, session="s2")])  # moved
        store.delete("t1", "a1", ["c2"])
        keys = [SeqKey("s1", 1), SeqKey("s1", 2), SeqKey("s2", 7), SeqKey("s1", 3)]
        assert [h.chunk_id for h in store.fetch("t1", "a1", keys)] == ["c3", "c1"]
        assert store.fetch("t1", "a2", keys) == []


def test_statistics_of_evicted_scopes_are_read_again(tmp_path: Path) -> None:
    with opened(tmp_path / "s", max_scopes=1) as store:
        store.upsert(FIRST)
        store.upsert([pt(f"b{i}", f"dogs and cats number {i}", i, agent="a2") for i in range(4)])
        before = scores(store, "dogs park")
        assert scores(store, "dogs", agent="a2")  # a2 pushes a1's statistics out
        store.upsert([pt("c6", "more dogs in the park", 6)])  # a1 not loaded: nothing to keep
        after = scores(store, "dogs park")
        assert len(after) == len(before) + 1 and ("c6", after[0][1]) in after
        memory = in_memory([*FIRST, pt("c6", "more dogs in the park", 6)])
        assert sorted(after) == sorted(scores(memory, "dogs park"))


def test_a_shard_of_the_older_format_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "old"
    path.mkdir()
    (path / "collection.json").write_text(json.dumps(SPEC.model_dump(mode="json")))
    with pytest.raises(ConfigError, match="Delete that directory"):
        EdgeVectorStore(path).ensure_collection(SPEC)
