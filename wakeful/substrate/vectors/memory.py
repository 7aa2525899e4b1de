"""A pure-Python vector store: the fake other packages test against.

It follows the same contract as the Qdrant backends (and runs the same conformance suite):
tenant and agent filters on every read, BM25 with IDF over the caller's own points, cosine
or dot dense scores, and reciprocal rank fusion for hybrid queries. Brute force, so only for
tests and small corpora.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

from wakeful.substrate.lexical import Bm25Encoder, SparseVector
from wakeful.substrate.vectors._common import (
    check_encoder,
    check_points,
    check_query,
    point_sparse,
    query_sparse,
    require_spec,
)
from wakeful.substrate.vectors.base import (
    CollectionSpec,
    Distance,
    FusionMode,
    SeqKey,
    VectorHit,
    VectorPoint,
    VectorQuery,
    point_id,
    ranking_depth,
    rrf_fuse,
)
from wakeful.substrate.vectors.base import (
    ranked as ranked_hits,
)

__all__ = ["MemoryVectorStore"]


class MemoryVectorStore:
    """Everything in a dict keyed by point id; insertion order breaks score ties."""

    def __init__(self, encoder: Bm25Encoder | None = None) -> None:
        self._encoder = encoder or Bm25Encoder()
        self._spec: CollectionSpec | None = None
        self._points: dict[str, tuple[dict[str, Any], tuple[float, ...], SparseVector]] = {}
        # The points live in this object alone: no other store holds the same index.
        self._identity = f"memory:{uuid.uuid4().hex}"

    @property
    def spec(self) -> CollectionSpec | None:
        return self._spec

    @property
    def identity(self) -> str:
        return self._identity

    def ensure_collection(self, spec: CollectionSpec, *, replace: bool = False) -> None:
        check_encoder(spec, self._encoder)
        if self._spec is not None and self._spec != spec and replace:
            self._points.clear()
            self._identity = f"memory:{uuid.uuid4().hex}"
        elif self._spec is not None:
            spec.check_compatible(self._spec)
        self._spec = spec

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        spec = require_spec(self._spec, "memory vector store")
        check_points(spec, points)
        for p in points:
            self._points[p.id] = (p.payload(), p.vector, point_sparse(self._encoder, p))

    def _scoped(
        self, tenant: str, agent: str, q: VectorQuery | None = None
    ) -> list[tuple[dict[str, Any], tuple[float, ...], SparseVector]]:
        out = []
        for payload, dense, sparse in self._points.values():
            if payload["tenant"] != tenant or payload["agent"] != agent:
                continue
            if q is not None and q.sessions is not None and payload["session_id"] not in q.sessions:
                continue
            if q is not None and q.kinds is not None and payload["kind"] not in q.kinds:
                continue
            out.append((payload, dense, sparse))
        return out

    def query(self, q: VectorQuery) -> list[VectorHit]:
        spec = require_spec(self._spec, "memory vector store")
        check_query(spec, q)
        corpus = self._scoped(q.tenant, q.agent, q)
        depth = ranking_depth(q)
        by_id = {p["chunk_id"]: p for p, _, _ in corpus}
        lists: list[list[tuple[str, float]]] = []
        if q.mode is not FusionMode.DENSE:
            idf = _idf(query_sparse(self._encoder, q), [s for _, _, s in corpus])
            scored = [(p["chunk_id"], _sparse_score(idf, s)) for p, _, s in corpus]
            lists.append(_top([x for x in scored if x[1] > 0], depth))
        if q.mode is not FusionMode.SPARSE:
            assert q.dense is not None  # guaranteed by VectorQuery's validator
            scored = [(p["chunk_id"], _dense(spec.distance, q.dense, d)) for p, d, _ in corpus]
            lists.append(_top(scored, depth))
        if q.mode is FusionMode.HYBRID:
            fused = rrf_fuse([[c for c, _ in ls] for ls in lists], q.weights, q.rrf_k)
            ranked = fused[: q.limit]
        else:
            ranked = lists[0]
        return ranked_hits([VectorHit.from_payload(by_id[c], s) for c, s in ranked], q.limit)

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        wanted = set(keys)
        return [
            VectorHit.from_payload(p, 0.0)
            for p, _, _ in self._scoped(tenant, agent)
            if p["session_id"] is not None and SeqKey(p["session_id"], p["seq"]) in wanted
        ]

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None:
        for chunk_id in chunk_ids:
            pid = point_id(tenant, chunk_id)
            entry = self._points.get(pid)
            if entry is not None and entry[0]["agent"] == agent:
                del self._points[pid]

    def count(self, tenant: str, agent: str) -> int:
        return len(self._scoped(tenant, agent))

    def holds(self, tenant: str, chunk_id: str) -> bool:
        return point_id(tenant, chunk_id) in self._points

    def renew_identity(self) -> str:
        self._identity = f"memory:{uuid.uuid4().hex}"
        return self._identity

    def close(self) -> None:
        """Nothing to release; the data lives as long as the object."""


def _top(scored: list[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
    return sorted(scored, key=lambda x: (-x[1], x[0]))[:limit]  # ties by id, as ``ranked``


def _idf(query: SparseVector, docs: list[SparseVector]) -> dict[int, float]:
    """Query weight times Qdrant's IDF, ``ln(1 + (N - n + 0.5) / (n + 0.5))``."""
    n_docs = len(docs)
    out = {}
    for index, weight in zip(query.indices, query.values, strict=True):
        n = sum(1 for d in docs if index in d.indices)
        out[index] = weight * math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
    return out


def _sparse_score(idf: dict[int, float], doc: SparseVector) -> float:
    return sum(idf[i] * v for i, v in zip(doc.indices, doc.values, strict=True) if i in idf)


def _dense(distance: Distance, a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if distance is Distance.DOT:
        return dot
    norm = math.hypot(*a) * math.hypot(*b)
    return dot / norm if norm else 0.0
