"""Vector stores as the retrieval tests fill them: turns embedded by the test's embedder,
in a collection of that embedder's vectors (and the default BM25 encoder's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from wakeful.substrate.embedders import Embedder
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.vectors.base import CollectionSpec, VectorPoint, VectorStore

S = TypeVar("S", bound=VectorStore)


@dataclass(frozen=True)
class Turn:
    """A chunk to index, all but its vector: :func:`embedded` makes that from ``text``."""

    chunk_id: str
    text: str
    seq: int
    session_id: str
    session_date: datetime
    external_id: str


def embedded(
    embedder: Embedder, turns: Sequence[Turn], *, tenant: str = "t1", agent: str = "a1"
) -> list[VectorPoint]:
    """The turns as points of ``tenant``'s ``agent``, each with its text's vector."""
    vectors = embedder.embed([t.text for t in turns])
    return [
        VectorPoint(
            tenant=tenant,
            agent=agent,
            vector=tuple(vec),
            embedder=embedder.name,
            **dataclasses.asdict(turn),
        )
        for turn, vec in zip(turns, vectors, strict=True)
    ]


def filled(store: S, embedder: Embedder, name: str, points: Sequence[VectorPoint]) -> S:
    """``store`` with the collection ``name`` of ``embedder``'s vectors, holding ``points``."""
    store.ensure_collection(
        CollectionSpec(
            name=name, embedder=embedder.name, dim=embedder.dim, sparse_encoder=Bm25Encoder().name
        )
    )
    store.upsert(points)
    return store
