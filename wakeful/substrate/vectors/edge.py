"""Qdrant Edge: the embedded default. One shard directory holds one collection.

The directory contains the shard and ``collection.json``, the :class:`CollectionSpec` it was
created with; reopening checks the spec so vectors of another embedder are never mixed in.
Hybrid queries use the engine's own prefetch and reciprocal rank fusion, and IDF is computed
over the querying tenant's and agent's points only, so one tenant's corpus never shifts
another's scores. A shard is owned by one process at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wakeful.errors import ConfigError
from wakeful.substrate.lexical import Bm25Encoder
from wakeful.substrate.vectors._common import (
    check_encoder,
    check_points,
    check_query,
    point_sparse,
    query_sparse,
    require_spec,
)
from wakeful.substrate.vectors.base import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    CollectionSpec,
    Distance,
    FusionMode,
    SeqKey,
    VectorHit,
    VectorPoint,
    VectorQuery,
    point_id,
)

if TYPE_CHECKING:
    import qdrant_edge as qe

__all__ = ["EdgeVectorStore"]

_SPEC_FILE = "collection.json"
_SHARD_DIR = "shard"
_PREFETCH_FACTOR = 4


def _engine() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError(
            "the embedded vector store needs qdrant-edge-py: pip install 'wakeful[embedded]'"
        ) from exc
    return qdrant_edge


class EdgeVectorStore:
    """A :class:`~wakeful.substrate.vectors.base.VectorStore` on a Qdrant Edge shard."""

    def __init__(self, path: str | os.PathLike[str], encoder: Bm25Encoder | None = None) -> None:
        self._path = Path(path)
        self._encoder = encoder or Bm25Encoder()
        self._spec: CollectionSpec | None = None
        self._shard: qe.EdgeShard | None = None
        self._qe = _engine()

    @property
    def spec(self) -> CollectionSpec | None:
        return self._spec

    def ensure_collection(self, spec: CollectionSpec) -> None:
        check_encoder(spec, self._encoder)
        spec_file = self._path / _SPEC_FILE
        if self._spec is not None:
            spec.check_compatible(self._spec)
            return
        if spec_file.exists():
            spec.check_compatible(CollectionSpec.model_validate_json(spec_file.read_text()))
            self._shard = self._qe.EdgeShard.load(str(self._path / _SHARD_DIR))
        else:
            self._shard = self._create(spec)
            tmp = spec_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True))
            tmp.replace(spec_file)
        self._spec = spec

    def _create(self, spec: CollectionSpec) -> qe.EdgeShard:
        qe_ = self._qe
        distance = {Distance.COSINE: qe_.Distance.Cosine, Distance.DOT: qe_.Distance.Dot}
        config = qe_.EdgeConfig(
            vectors={DENSE_VECTOR: qe_.EdgeVectorParams(spec.dim, distance[spec.distance])},
            sparse_vectors={SPARSE_VECTOR: qe_.EdgeSparseVectorParams(modifier=qe_.Modifier.Idf)},
        )
        self._path.mkdir(parents=True, exist_ok=True)
        shard: qe.EdgeShard = qe_.EdgeShard.create(str(self._path / _SHARD_DIR), config)
        keyword = qe_.PayloadSchemaType.Keyword
        shard.update(
            qe_.UpdateOperation.create_field_index("tenant", qe_.KeywordIndexParams(is_tenant=True))
        )
        for field in ("agent", "session_id", "kind"):
            shard.update(qe_.UpdateOperation.create_field_index(field, keyword))
        shard.update(qe_.UpdateOperation.create_field_index("seq", qe_.PayloadSchemaType.Integer))
        return shard

    def _require(self) -> tuple[CollectionSpec, qe.EdgeShard]:
        spec = require_spec(self._spec, f"edge vector store at {self._path}")
        assert self._shard is not None
        return spec, self._shard

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        spec, shard = self._require()
        check_points(spec, points)
        if not points:
            return
        qe_ = self._qe
        out = []
        for p in points:
            vectors: dict[str, Any] = {DENSE_VECTOR: list(p.vector)}
            sparse = point_sparse(self._encoder, p)
            if not sparse.is_empty:
                vectors[SPARSE_VECTOR] = qe_.SparseVector(list(sparse.indices), list(sparse.values))
            out.append(qe_.Point(id=p.id, vector=vectors, payload=p.payload()))
        shard.update(qe_.UpdateOperation.upsert_points(out))

    def _scope(self, tenant: str, agent: str) -> list[Any]:
        qe_ = self._qe
        return [
            qe_.FieldCondition(key="tenant", match=qe_.MatchValue(tenant)),
            qe_.FieldCondition(key="agent", match=qe_.MatchValue(agent)),
        ]

    def query(self, q: VectorQuery) -> list[VectorHit]:
        spec, shard = self._require()
        check_query(spec, q)
        qe_ = self._qe
        scope = qe_.Filter(must=self._scope(q.tenant, q.agent))
        must = self._scope(q.tenant, q.agent)
        if q.sessions is not None:
            must.append(qe_.FieldCondition(key="session_id", match=qe_.MatchAny(list(q.sessions))))
        if q.kinds is not None:
            must.append(qe_.FieldCondition(key="kind", match=qe_.MatchAny(list(q.kinds))))
        where = qe_.Filter(must=must)
        depth = q.limit * _PREFETCH_FACTOR if q.mode is FusionMode.HYBRID else q.limit
        sources: list[tuple[Any, Any, float]] = []  # (query, params, weight)
        if q.mode is not FusionMode.DENSE:
            sparse = query_sparse(self._encoder, q)
            if not sparse.is_empty:
                vector = qe_.SparseVector(list(sparse.indices), list(sparse.values))
                params = qe_.SearchParams(idf=qe_.IdfParams(corpus=scope))
                sources.append(
                    (qe_.Query.Nearest(vector, using=SPARSE_VECTOR), params, q.weights[0])
                )
        if q.mode is not FusionMode.SPARSE:
            assert q.dense is not None
            dense = qe_.Query.Nearest(list(q.dense), using=DENSE_VECTOR)
            sources.append((dense, None, q.weights[1]))
        if not sources:
            return []
        if q.mode is FusionMode.HYBRID:
            prefetches = [
                qe_.Prefetch(limit=depth, query=query, filter=where, params=params)
                for query, params, _ in sources
            ]
            fusion = qe_.Fusion.Rrf(k=q.rrf_k, weights=[w for _, _, w in sources])
            request = qe_.QueryRequest(
                limit=q.limit, prefetches=prefetches, query=fusion, filter=where, with_payload=True
            )
        else:
            query, params, _ = sources[0]
            request = qe_.QueryRequest(
                limit=q.limit, query=query, filter=where, params=params, with_payload=True
            )
        return [VectorHit.from_payload(p.payload or {}, p.score) for p in shard.query(request)]

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        _, shard = self._require()
        if not keys:
            return []
        qe_ = self._qe
        by_session: dict[str, list[int]] = {}
        for key in keys:
            by_session.setdefault(key.session_id, []).append(key.seq)
        should = [
            qe_.Filter(
                must=[
                    qe_.FieldCondition(key="session_id", match=qe_.MatchValue(session)),
                    qe_.FieldCondition(key="seq", match=qe_.MatchAny(sorted(set(seqs)))),
                ]
            )
            for session, seqs in by_session.items()
        ]
        where = qe_.Filter(must=self._scope(tenant, agent), should=should)
        records, _ = shard.scroll(
            qe_.ScrollRequest(limit=len(keys), filter=where, with_payload=True)
        )
        hits = [VectorHit.from_payload(r.payload or {}, 0.0) for r in records]
        return sorted(hits, key=lambda h: (h.session_id or "", h.seq, h.chunk_id))

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None:
        _, shard = self._require()
        if not chunk_ids:
            return
        qe_ = self._qe
        ids = {point_id(tenant, c) for c in chunk_ids}
        where = qe_.Filter(must=[*self._scope(tenant, agent), qe_.HasIdCondition(ids)])
        shard.update(qe_.UpdateOperation.delete_points_by_filter(where))

    def count(self, tenant: str, agent: str) -> int:
        _, shard = self._require()
        where = self._qe.Filter(must=self._scope(tenant, agent))
        return int(shard.count(self._qe.CountRequest(exact=True, filter=where)))

    def optimize(self) -> bool:
        """Build indexes now (HNSW, payload) and merge segments; blocks until done.

        An embedded shard has no background optimizer: call this after a bulk load, or
        queries stay brute force. Returns whether anything was optimized.
        """
        _, shard = self._require()
        return bool(shard.optimize())

    def close(self) -> None:
        """Flush and release the shard; safe to call twice."""
        if self._shard is not None:
            self._shard.flush()
            self._shard.close()
            self._shard = None
            self._spec = None
