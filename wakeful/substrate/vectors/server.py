"""Qdrant server through ``qdrant-client``: the production backend.

Same semantics as the embedded shard: the :class:`CollectionSpec` lives in the collection's
metadata and is checked on open, sparse vectors come from the shared client-side encoder
with the server applying IDF over the querying tenant's and agent's points, and hybrid
queries use the server's prefetch and reciprocal rank fusion.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models

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
    TIE_SLACK,
    CollectionMismatchError,
    CollectionSpec,
    Distance,
    FusionMode,
    SeqKey,
    VectorHit,
    VectorPoint,
    VectorQuery,
    by_position,
    point_id,
    ranked,
    ranking_depth,
)

__all__ = ["ServerVectorStore"]

_SPEC_KEY = "wakeful_collection_spec"
# An id made with the collection: workers on one server share its index and its cursor.
_ID_KEY = "wakeful_index_id"
_DISTANCE = {Distance.COSINE: models.Distance.COSINE, Distance.DOT: models.Distance.DOT}


class ServerVectorStore:
    """A :class:`~wakeful.substrate.vectors.base.VectorStore` on a Qdrant server collection.

    Pass ``url`` (and ``api_key``), or an already built ``client`` (e.g. tests, or a client
    shared with other code). Writes wait for the server to apply them, so a read right after
    an upsert sees it.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: int = 10,
        client: QdrantClient | None = None,
        encoder: Bm25Encoder | None = None,
    ) -> None:
        if (url is None) == (client is None):
            raise ValueError("give exactly one of url or client")
        self._client = client or QdrantClient(url=url, api_key=api_key, timeout=timeout)
        self._encoder = encoder or Bm25Encoder()
        self._spec: CollectionSpec | None = None
        self._identity: str | None = None

    @property
    def spec(self) -> CollectionSpec | None:
        return self._spec

    @property
    def identity(self) -> str:
        """``qdrant:<id>``: an id kept in the collection's metadata, made when the
        collection is created; every client of that collection, by whatever address it
        reaches the server, sees the same one."""
        if self._identity is None:
            raise RuntimeError("the Qdrant server collection is not open")
        return self._identity

    def ensure_collection(self, spec: CollectionSpec, *, replace: bool = False) -> None:
        check_encoder(spec, self._encoder)
        if self._spec is not None and not (replace and self._spec != spec):
            spec.check_compatible(self._spec)
            return
        if self._client.collection_exists(spec.name):
            info = self._client.get_collection(spec.name)
            stored = (info.config.metadata or {}).get(_SPEC_KEY)
            if stored is None:
                raise CollectionMismatchError(
                    f"collection {spec.name!r} exists but was not created by Wakeful "
                    "(no spec in its metadata); choose another collection name"
                )
            if replace and CollectionSpec.model_validate(stored) != spec:
                self._client.delete_collection(spec.name)
                self._create(spec)
            else:
                spec.check_compatible(CollectionSpec.model_validate(stored))
        else:
            self._create(spec)
        self._identity = f"qdrant:{self._own_id(spec.name)}"
        self._spec = spec

    def _own_id(self, name: str) -> str:
        """The collection's id; one made by an older version has none, and is given one
        (two clients racing to give it one leave the last; a client holding the other
        only indexes the collection once more, never partly)."""
        metadata = dict(self._client.get_collection(name).config.metadata or {})
        found = metadata.get(_ID_KEY)
        if isinstance(found, str) and found:
            return found
        metadata[_ID_KEY] = uuid.uuid4().hex
        self._client.update_collection(name, metadata=metadata)
        return str(metadata[_ID_KEY])

    def _create(self, spec: CollectionSpec) -> None:
        self._client.create_collection(
            spec.name,
            vectors_config={
                DENSE_VECTOR: models.VectorParams(size=spec.dim, distance=_DISTANCE[spec.distance])
            },
            sparse_vectors_config={
                SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)
            },
            metadata={_SPEC_KEY: spec.model_dump(mode="json"), _ID_KEY: uuid.uuid4().hex},
        )
        tenant_index = models.KeywordIndexParams(
            type=models.KeywordIndexType.KEYWORD, is_tenant=True
        )
        self._client.create_payload_index(spec.name, "tenant", tenant_index, wait=True)
        for field in ("agent", "session_id", "kind"):
            self._client.create_payload_index(
                spec.name, field, models.PayloadSchemaType.KEYWORD, wait=True
            )
        self._client.create_payload_index(
            spec.name, "seq", models.PayloadSchemaType.INTEGER, wait=True
        )

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        spec = require_spec(self._spec, "qdrant server vector store")
        check_points(spec, points)
        if not points:
            return
        structs = []
        for p in points:
            vectors: dict[str, Any] = {DENSE_VECTOR: list(p.vector)}
            sparse = point_sparse(self._encoder, p)
            if not sparse.is_empty:
                vectors[SPARSE_VECTOR] = models.SparseVector(
                    indices=list(sparse.indices), values=list(sparse.values)
                )
            structs.append(models.PointStruct(id=p.id, vector=vectors, payload=p.payload()))
        self._client.upsert(spec.name, points=structs, wait=True)

    @staticmethod
    def _scope(tenant: str, agent: str) -> list[models.Condition]:
        return [
            models.FieldCondition(key="tenant", match=models.MatchValue(value=tenant)),
            models.FieldCondition(key="agent", match=models.MatchValue(value=agent)),
        ]

    def query(self, q: VectorQuery) -> list[VectorHit]:
        spec = require_spec(self._spec, "qdrant server vector store")
        check_query(spec, q)
        scope = models.Filter(must=self._scope(q.tenant, q.agent))
        must = self._scope(q.tenant, q.agent)
        if q.sessions is not None:
            must.append(
                models.FieldCondition(key="session_id", match=models.MatchAny(any=list(q.sessions)))
            )
        if q.kinds is not None:
            must.append(models.FieldCondition(key="kind", match=models.MatchAny(any=list(q.kinds))))
        where = models.Filter(must=must)
        depth = ranking_depth(q)
        sources: list[models.Prefetch] = []
        weights: list[float] = []
        if q.mode is not FusionMode.DENSE:
            sparse = query_sparse(self._encoder, q)
            if not sparse.is_empty:
                vector = models.SparseVector(
                    indices=list(sparse.indices), values=list(sparse.values)
                )
                params = models.SearchParams(idf=models.IdfCorpusParams(corpus=scope))
                sources.append(
                    models.Prefetch(
                        query=vector, using=SPARSE_VECTOR, filter=where, params=params, limit=depth
                    )
                )
                weights.append(q.weights[0])
        if q.mode is not FusionMode.SPARSE:
            assert q.dense is not None
            sources.append(
                models.Prefetch(query=list(q.dense), using=DENSE_VECTOR, filter=where, limit=depth)
            )
            weights.append(q.weights[1])
        if not sources:
            return []
        if q.mode is FusionMode.HYBRID:
            fusion = models.RrfQuery(rrf=models.Rrf(k=q.rrf_k, weights=weights))
            response = self._client.query_points(
                spec.name,
                prefetch=sources,
                query=fusion,
                query_filter=where,
                limit=q.limit + TIE_SLACK,
                with_payload=True,
            )
        else:
            only = sources[0]
            response = self._client.query_points(
                spec.name,
                query=only.query,
                using=only.using,
                query_filter=where,
                search_params=only.params,
                limit=q.limit + TIE_SLACK,
                with_payload=True,
            )
        hits = [VectorHit.from_payload(p.payload or {}, p.score) for p in response.points]
        return ranked(hits, q.limit)

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        spec = require_spec(self._spec, "qdrant server vector store")
        if not keys:
            return []
        by_session: dict[str, list[int]] = {}
        for key in keys:
            by_session.setdefault(key.session_id, []).append(key.seq)
        should: list[models.Condition] = [
            models.Filter(
                must=[
                    models.FieldCondition(key="session_id", match=models.MatchValue(value=session)),
                    models.FieldCondition(key="seq", match=models.MatchAny(any=sorted(set(seqs)))),
                ]
            )
            for session, seqs in by_session.items()
        ]
        where = models.Filter(must=self._scope(tenant, agent), should=should)
        records, _ = self._client.scroll(
            spec.name, scroll_filter=where, limit=len(keys), with_payload=True
        )
        hits = [VectorHit.from_payload(r.payload or {}, 0.0) for r in records]
        return by_position(hits)

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None:
        spec = require_spec(self._spec, "qdrant server vector store")
        if not chunk_ids:
            return
        ids: list[models.ExtendedPointId] = [point_id(tenant, c) for c in chunk_ids]
        where = models.Filter(must=[*self._scope(tenant, agent), models.HasIdCondition(has_id=ids)])
        self._client.delete(
            spec.name, points_selector=models.FilterSelector(filter=where), wait=True
        )

    def count(self, tenant: str, agent: str) -> int:
        spec = require_spec(self._spec, "qdrant server vector store")
        where = models.Filter(must=self._scope(tenant, agent))
        return self._client.count(spec.name, count_filter=where, exact=True).count

    def holds(self, tenant: str, chunk_id: str) -> bool:
        spec = require_spec(self._spec, "qdrant server vector store")
        found = self._client.retrieve(
            spec.name, [point_id(tenant, chunk_id)], with_payload=False, with_vectors=False
        )
        return bool(found)

    def renew_identity(self) -> str:
        spec = require_spec(self._spec, "qdrant server vector store")
        metadata = dict(self._client.get_collection(spec.name).config.metadata or {})
        metadata[_ID_KEY] = uuid.uuid4().hex
        self._client.update_collection(spec.name, metadata=metadata)
        self._identity = f"qdrant:{metadata[_ID_KEY]}"
        return self._identity

    def close(self) -> None:
        self._client.close()
        self._spec = None
