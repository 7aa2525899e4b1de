"""Qdrant Edge: the embedded default. One shard directory holds one collection.

The directory contains the shard, ``collection.json`` (the :class:`CollectionSpec` it was
created with; reopening checks the spec so vectors of another embedder are never mixed in) and
``edge-format.json`` (how the shard stores sparse vectors) and ``index-id.json`` (the
shard's identity, see :attr:`EdgeVectorStore.identity`). Hybrid queries use the engine's
own prefetch and reciprocal rank fusion.

BM25's IDF is computed over the querying tenant's and agent's points only, so one tenant's
corpus never shifts another's scores. The store computes it from statistics it keeps per
scope (:mod:`~wakeful.substrate.vectors.edge_catalog`) and sends IDF-weighted queries; the
shard holds plain term-frequency weights and applies no modifier of its own. Asking the
engine for a filtered IDF instead costs a walk of every query term's posting list through the
filter on each query. A shard is owned by one process at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
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
    TIE_SLACK,
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
from wakeful.substrate.vectors.edge_catalog import Catalogs, PointFacts, ScopeCatalog

if TYPE_CHECKING:
    import qdrant_edge as qe
    from qdrant_edge import PointId

__all__ = ["EdgeVectorStore"]

_SPEC_FILE = "collection.json"
_FORMAT_FILE = "edge-format.json"
_IDENTITY_FILE = "index-id.json"
# 2: term-frequency sparse weights without an engine IDF modifier; IDF comes with the query.
_FORMAT = {"version": 2, "sparse": "tf-weights, idf applied per scope at query time"}
_SHARD_DIR = "shard"
_SCAN_PAGE = 10_000
_SCOPE_FIELDS = ["tenant", "agent", "session_id", "seq"]


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

    def __init__(
        self,
        path: str | os.PathLike[str],
        encoder: Bm25Encoder | None = None,
        *,
        max_scopes: int = 64,
    ) -> None:
        self._path = Path(path)
        self._encoder = encoder or Bm25Encoder()
        self._spec: CollectionSpec | None = None
        self._shard: qe.EdgeShard | None = None
        self._identity: str | None = None
        self._qe = _engine()
        # Per (tenant, agent): BM25 statistics and chunk positions (see edge_catalog).
        self._catalogs = Catalogs(max_scopes)

    @property
    def spec(self) -> CollectionSpec | None:
        return self._spec

    @property
    def identity(self) -> str:
        """``edge:<id>``: an id made when the shard is created, bound to the directory it
        lives in. A shard copied or moved to another directory is another index from then
        on (it gets a new id, and catches up through a cursor of its own): two copies
        sharing a cursor would each hold only what it happened to index."""
        if self._identity is None:
            raise RuntimeError(f"edge vector store at {self._path} is not open")
        return self._identity

    def ensure_collection(self, spec: CollectionSpec, *, replace: bool = False) -> None:
        check_encoder(spec, self._encoder)
        spec_file = self._path / _SPEC_FILE
        if replace and spec_file.exists() and not self._holds(spec):
            self._delete_shard()
        if self._spec is not None:
            spec.check_compatible(self._spec)
            return
        if spec_file.exists():
            spec.check_compatible(CollectionSpec.model_validate_json(spec_file.read_text()))
            self._check_format()
            self._shard = self._qe.EdgeShard.load(str(self._path / _SHARD_DIR))
        else:
            self._shard = self._create(spec)
            _write_json(self._path / _FORMAT_FILE, _FORMAT)
            _write_json(spec_file, spec.model_dump(mode="json"))
            (self._path / _IDENTITY_FILE).unlink(missing_ok=True)
        self._identity = self._own_identity()
        self._spec = spec

    def _own_identity(self) -> str:
        """The shard's id, made anew for a new shard, an older shard without one, or a
        shard found in another directory than the one it was made in."""
        where = str(self._path.resolve())
        found = self._path / _IDENTITY_FILE
        try:
            stored = json.loads(found.read_text())
        except (FileNotFoundError, ValueError):
            stored = {}
        if not isinstance(stored, dict) or stored.get("path") != where or not stored.get("id"):
            stored = {"id": uuid.uuid4().hex, "path": where}
            _write_json(found, stored)
        return f"edge:{stored['id']}"

    def _holds(self, spec: CollectionSpec) -> bool:
        """Whether the shard on disk was created with ``spec``, in this storage format."""
        stored = CollectionSpec.model_validate_json((self._path / _SPEC_FILE).read_text())
        found = self._path / _FORMAT_FILE
        version = json.loads(found.read_text()).get("version") if found.exists() else 1
        return stored == spec and version == _FORMAT["version"]

    def _delete_shard(self) -> None:
        """Close and delete the shard and its files; ``ensure_collection`` creates it anew."""
        self.close()
        shutil.rmtree(self._path / _SHARD_DIR, ignore_errors=True)
        for name in (_SPEC_FILE, _FORMAT_FILE, _IDENTITY_FILE):
            (self._path / name).unlink(missing_ok=True)

    def _check_format(self) -> None:
        found = self._path / _FORMAT_FILE
        version = json.loads(found.read_text()).get("version") if found.exists() else 1
        if version != _FORMAT["version"]:
            raise ConfigError(
                f"the Qdrant Edge shard at {self._path} has storage format {version}; this "
                f"version of Wakeful reads format {_FORMAT['version']}. Delete that directory: "
                "the event index rebuilds it from the event log on the next compile"
            )

    def _create(self, spec: CollectionSpec) -> qe.EdgeShard:
        qe_ = self._qe
        distance = {Distance.COSINE: qe_.Distance.Cosine, Distance.DOT: qe_.Distance.Dot}
        config = qe_.EdgeConfig(
            vectors={DENSE_VECTOR: qe_.EdgeVectorParams(spec.dim, distance[spec.distance])},
            # No engine IDF: the store weighs queries with the scope's own IDF.
            sparse_vectors={SPARSE_VECTOR: qe_.EdgeSparseVectorParams()},
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
        arriving = []
        for p in points:
            vectors: dict[str, Any] = {DENSE_VECTOR: list(p.vector)}
            sparse = point_sparse(self._encoder, p)
            if not sparse.is_empty:
                vectors[SPARSE_VECTOR] = qe_.SparseVector(list(sparse.indices), list(sparse.values))
            out.append(qe_.Point(id=p.id, vector=vectors, payload=p.payload()))
            arriving.append(PointFacts.of(p.id, p.tenant, p.agent, p.seq, p.session_id, sparse))
        # Points this upsert replaces leave their scope's statistics (only loaded scopes
        # keep any, so with none loaded there is nothing to read).
        leaving = self._stored(shard, [p.id for p in points]) if self._catalogs.any() else []
        shard.update(qe_.UpdateOperation.upsert_points(out))
        self._catalogs.replace(leaving, arriving)

    def _stored(self, shard: qe.EdgeShard, ids: Sequence[str]) -> list[PointFacts]:
        unique: list[PointId] = list(dict.fromkeys(ids))
        records = shard.retrieve(unique, _SCOPE_FIELDS, [SPARSE_VECTOR])
        return [_facts(r) for r in records]

    def _catalog(self, shard: qe.EdgeShard, tenant: str, agent: str) -> ScopeCatalog:
        """The scope's statistics, read from the shard on first use (one scan of the scope)."""
        catalog = self._catalogs.get((tenant, agent))
        if catalog is not None:
            return catalog
        qe_ = self._qe
        where = qe_.Filter(must=self._scope(tenant, agent))
        facts: list[PointFacts] = []
        offset = None
        while True:
            records, offset = shard.scroll(
                qe_.ScrollRequest(
                    limit=_SCAN_PAGE,
                    offset=offset,
                    filter=where,
                    with_payload=_SCOPE_FIELDS,
                    with_vector=[SPARSE_VECTOR],
                )
            )
            facts += [_facts(r) for r in records]
            if offset is None:
                break
        return self._catalogs.put((tenant, agent), facts)

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
        must = self._scope(q.tenant, q.agent)
        if q.sessions is not None:
            must.append(qe_.FieldCondition(key="session_id", match=qe_.MatchAny(list(q.sessions))))
        if q.kinds is not None:
            must.append(qe_.FieldCondition(key="kind", match=qe_.MatchAny(list(q.kinds))))
        where = qe_.Filter(must=must)
        depth = ranking_depth(q)
        sources: list[tuple[Any, float]] = []  # (query, weight)
        if q.mode is not FusionMode.DENSE:
            sparse = query_sparse(self._encoder, q)
            if not sparse.is_empty:
                weighted = self._catalog(shard, q.tenant, q.agent).weigh(sparse)
                vector = qe_.SparseVector(list(weighted.indices), list(weighted.values))
                sources.append((qe_.Query.Nearest(vector, using=SPARSE_VECTOR), q.weights[0]))
        if q.mode is not FusionMode.SPARSE:
            assert q.dense is not None
            dense = qe_.Query.Nearest(list(q.dense), using=DENSE_VECTOR)
            sources.append((dense, q.weights[1]))
        if not sources:
            return []
        if q.mode is FusionMode.HYBRID:
            prefetches = [
                qe_.Prefetch(limit=depth, query=query, filter=where) for query, _ in sources
            ]
            fusion = qe_.Fusion.Rrf(k=q.rrf_k, weights=[w for _, w in sources])
            request = qe_.QueryRequest(
                limit=q.limit + TIE_SLACK,
                prefetches=prefetches,
                query=fusion,
                filter=where,
                with_payload=True,
            )
        else:
            request = qe_.QueryRequest(
                limit=q.limit + TIE_SLACK, query=sources[0][0], filter=where, with_payload=True
            )
        hits = [VectorHit.from_payload(p.payload or {}, p.score) for p in shard.query(request)]
        return ranked(hits, q.limit)

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        _, shard = self._require()
        if not keys:
            return []
        ids: list[PointId] = list(self._catalog(shard, tenant, agent).point_ids(keys))
        records = shard.retrieve(ids, True, False) if ids else []
        # Ids come from this scope's catalog; the payload check keeps isolation structural.
        hits = [
            VectorHit.from_payload(r.payload or {}, 0.0)
            for r in records
            if r.payload and r.payload.get("tenant") == tenant and r.payload.get("agent") == agent
        ]
        return by_position(hits)

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None:
        _, shard = self._require()
        if not chunk_ids:
            return
        qe_ = self._qe
        ids = {point_id(tenant, c) for c in chunk_ids}
        leaving = []
        if self._catalogs.any():
            leaving = [
                p
                for p in self._stored(shard, sorted(ids))
                if (p.tenant, p.agent) == (tenant, agent)
            ]
        where = qe_.Filter(must=[*self._scope(tenant, agent), qe_.HasIdCondition(ids)])
        shard.update(qe_.UpdateOperation.delete_points_by_filter(where))
        self._catalogs.replace(leaving, [])

    def count(self, tenant: str, agent: str) -> int:
        _, shard = self._require()
        where = self._qe.Filter(must=self._scope(tenant, agent))
        return int(shard.count(self._qe.CountRequest(exact=True, filter=where)))

    def holds(self, tenant: str, chunk_id: str) -> bool:
        _, shard = self._require()
        return bool(shard.retrieve([point_id(tenant, chunk_id)], False, False))

    def renew_identity(self) -> str:
        self._require()
        (self._path / _IDENTITY_FILE).unlink(missing_ok=True)
        self._identity = self._own_identity()
        return self._identity

    def optimize(self) -> bool:
        """Build indexes now (HNSW, payload) and merge segments; blocks until done.

        An embedded shard has no background optimizer: call this after a bulk load, or
        queries stay brute force. Returns whether anything was optimized.
        """
        _, shard = self._require()
        return bool(shard.optimize())

    def close(self) -> None:
        """Flush and release the shard; safe to call twice."""
        self._catalogs.clear()
        if self._shard is not None:
            self._shard.flush()
            self._shard.close()
            self._shard = None
            self._spec = None
            self._identity = None


def _facts(record: Any) -> PointFacts:
    vectors = record.vector if isinstance(record.vector, dict) else {}
    sparse = vectors.get(SPARSE_VECTOR)
    return PointFacts.from_record(str(record.id), record.payload or {}, sparse)


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)
