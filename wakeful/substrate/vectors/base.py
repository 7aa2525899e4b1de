"""The vector store contract every backend implements.

A store holds one collection of *chunks*: a dense vector from one embedder, a BM25 sparse
vector from one lexical encoder, and a payload that carries everything retrieval needs
(text, seq, session, date, external id) so retrieval never has to ask Postgres.

Isolation is structural: :class:`VectorQuery` cannot be built without a tenant and an agent,
and every backend turns them into payload filters on every read, count and delete. Point ids
are derived from the tenant, so a point of one tenant can never overwrite another's.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Sequence
from datetime import datetime
from enum import StrEnum
from operator import itemgetter
from typing import Any, NamedTuple, Protocol, Self, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wakeful.compiler.blocks import content_hash
from wakeful.errors import UserError
from wakeful.substrate.lexical import SparseVector

__all__ = [
    "DENSE_VECTOR",
    "SPARSE_VECTOR",
    "CollectionMismatchError",
    "CollectionSpec",
    "Distance",
    "EmbedderMismatchError",
    "FusionMode",
    "SeqKey",
    "SparseVector",
    "VectorHit",
    "VectorPoint",
    "VectorQuery",
    "VectorStore",
    "point_id",
    "rrf_fuse",
    "stable_by_score",
]

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"

# Fixed namespace: point ids must be identical in every process and on every machine.
K = TypeVar("K", bound=Hashable)

_POINT_NAMESPACE = uuid.UUID("5b0c2f57-52f4-4c55-9d0e-7a1d6a3f9e21")


class CollectionMismatchError(UserError):
    """A collection exists with a different configuration than the one asked for."""


class EmbedderMismatchError(CollectionMismatchError):
    """Vectors of one embedder were about to meet vectors of another."""


class Distance(StrEnum):
    """Only similarity-like metrics, so a higher score is better on every backend."""

    COSINE = "cosine"
    DOT = "dot"


class FusionMode(StrEnum):
    DENSE = "dense"
    SPARSE = "sparse"
    HYBRID = "hybrid"


class CollectionSpec(BaseModel):
    """What a collection holds. Persisted with the collection and checked on every open."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    embedder: str = Field(min_length=1, description="Embedder.name of every dense vector.")
    dim: int = Field(gt=0)
    distance: Distance = Distance.COSINE
    sparse_encoder: str = Field(min_length=1, description="Bm25Encoder.name of sparse vectors.")

    def check_compatible(self, stored: CollectionSpec) -> None:
        """Raise when ``stored`` (what is on disk) cannot serve this spec."""
        if (stored.embedder, stored.dim) != (self.embedder, self.dim):
            raise EmbedderMismatchError(
                f"collection {stored.name!r} holds vectors of embedder {stored.embedder!r} "
                f"(dim {stored.dim}); refusing to use it with {self.embedder!r} (dim "
                f"{self.dim}). Use a collection per embedder, or re-embed into a new one."
            )
        if stored != self:
            raise CollectionMismatchError(
                f"collection {stored.name!r} was created as {stored.model_dump()}, "
                f"not {self.model_dump()}; create a new collection for the new settings."
            )


def point_id(tenant: str, chunk_id: str) -> str:
    """Stable point id of a chunk: the same in any process, distinct per tenant."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{tenant}\x00{chunk_id}"))


class VectorPoint(BaseModel):
    """One chunk to index. ``sparse`` is computed from ``text`` when not given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    chunk_id: str = Field(min_length=1)
    text: str
    vector: tuple[float, ...]
    embedder: str = Field(min_length=1)
    sparse: SparseVector | None = None
    seq: int = Field(default=0, description="Position in the session; neighbours are ±1.")
    session_id: str | None = Field(
        default=None,
        description="With ``seq``, names one chunk of the agent; None for unpositioned chunks.",
    )
    session_date: datetime | None = None
    external_id: str | None = None
    kind: str = "turn"
    source_hash: str | None = Field(default=None, description="Defaults to the text's hash.")

    @field_validator("session_date")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("session_date must be timezone-aware")
        return value

    @property
    def id(self) -> str:
        return point_id(self.tenant, self.chunk_id)

    def payload(self) -> dict[str, Any]:
        """The stored payload; every key is one retrieval reads back."""
        return {
            "tenant": self.tenant,
            "agent": self.agent,
            "chunk_id": self.chunk_id,
            "text": self.text,
            "seq": self.seq,
            "session_id": self.session_id,
            "session_date": self.session_date.isoformat() if self.session_date else None,
            "external_id": self.external_id,
            "kind": self.kind,
            "source_hash": self.source_hash or content_hash(self.text),
        }


class VectorQuery(BaseModel):
    """A scoped query. ``tenant`` and ``agent`` are required: there is no unscoped read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    mode: FusionMode = FusionMode.HYBRID
    dense: tuple[float, ...] | None = None
    embedder: str | None = Field(default=None, description="Embedder.name of ``dense``.")
    sparse: SparseVector | None = None
    text: str | None = Field(default=None, description="Encoded to ``sparse`` by the store.")
    limit: int = Field(default=10, gt=0)
    sessions: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    rrf_k: int = Field(default=60, gt=0)
    weights: tuple[float, float] = Field(default=(1.0, 1.0), description="(sparse, dense).")

    @model_validator(mode="after")
    def _inputs(self) -> Self:
        if self.mode is not FusionMode.SPARSE and (self.dense is None or self.embedder is None):
            raise ValueError(f"a {self.mode.value} query needs a dense vector and its embedder")
        if self.mode is not FusionMode.DENSE and self.sparse is None and self.text is None:
            raise ValueError(f"a {self.mode.value} query needs a sparse vector or text")
        return self


class VectorHit(BaseModel):
    """A point read back, with its score under the query (0 for plain fetches)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str
    score: float
    text: str
    seq: int
    session_id: str | None
    session_date: datetime | None
    external_id: str | None
    kind: str
    source_hash: str

    @classmethod
    def from_payload(cls, payload: dict[str, Any], score: float) -> VectorHit:
        date = payload.get("session_date")
        return cls(
            chunk_id=payload["chunk_id"],
            score=float(score),
            text=payload["text"],
            seq=int(payload["seq"]),
            session_id=payload.get("session_id"),
            session_date=datetime.fromisoformat(date) if date else None,
            external_id=payload.get("external_id"),
            kind=payload.get("kind", "turn"),
            source_hash=payload["source_hash"],
        )


class SeqKey(NamedTuple):
    """A chunk's position: the ``seq``-th chunk of a session."""

    session_id: str
    seq: int


@runtime_checkable
class VectorStore(Protocol):
    """One collection of chunks. Every read and delete is scoped to (tenant, agent)."""

    @property
    def spec(self) -> CollectionSpec | None: ...

    @property
    def identity(self) -> str:
        """Which index this is, once ``ensure_collection`` has opened it: equal for two
        stores only when they hold the same points (one Qdrant server collection), and new
        whenever the collection is created anew. The event index keeps one cursor per
        identity, so every store it writes into is caught up whole."""
        ...

    def ensure_collection(self, spec: CollectionSpec, *, replace: bool = False) -> None:
        """Create the collection, or open it and check it was created with ``spec``.

        ``replace``: a collection created with another spec (another embedder or analyzer)
        is deleted and created anew instead of refused. For derived data only, such as the
        event index, which is rebuilt from the event log."""
        ...

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; repeating an upsert changes nothing."""
        ...

    def query(self, q: VectorQuery) -> list[VectorHit]: ...

    def fetch(self, tenant: str, agent: str, keys: Sequence[SeqKey]) -> list[VectorHit]:
        """Points at the given (session, seq) positions; missing positions are skipped."""
        ...

    def delete(self, tenant: str, agent: str, chunk_ids: Sequence[str]) -> None: ...

    def count(self, tenant: str, agent: str) -> int: ...

    def holds(self, tenant: str, chunk_id: str) -> bool:
        """Whether the collection holds the chunk's point."""
        ...

    def renew_identity(self) -> str:
        """Give the index a new :attr:`identity` (kept from then on) and return it: the
        event index does so for a store that lacks points its cursor says it holds, such
        as a copy of another worker's shard, so the two stop sharing a cursor."""
        ...

    def close(self) -> None: ...


# Extra hits asked of the engine beyond a query's limit, so that hits tied at the cut are
# chosen by id here rather than by the engine's internal order (see ``ranked``).
TIE_SLACK = 16
# Engines fuse the candidates of each prefetch: every backend takes each ranking of a hybrid
# query this many times its limit deep, so that their results agree.
PREFETCH_FACTOR = 4


def ranking_depth(q: VectorQuery) -> int:
    """How many candidates each of the query's rankings brings (to fusion, when hybrid)."""
    return q.limit * PREFETCH_FACTOR if q.mode is FusionMode.HYBRID else q.limit


def ranked(hits: Sequence[VectorHit], limit: int) -> list[VectorHit]:
    """Hits by descending score, ties by chunk id, cut to ``limit``.

    Qdrant returns equal scores in an order of its own, which differs from one process to
    the next (a BM25 query whose words two turns share equally, say); retrieval, and with it
    a wake's evidence, must not."""
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:limit]


def by_position(hits: Sequence[VectorHit]) -> list[VectorHit]:
    """Fetched hits by session and seq, whatever order the engine read them in."""
    return sorted(hits, key=lambda h: (h.session_id or "", h.seq, h.chunk_id))


def rrf_fuse(
    rankings: Sequence[Sequence[K]], weights: Sequence[float], k: int = 60
) -> list[tuple[K, float]]:
    """Weighted reciprocal rank fusion: ``Σ w / (k + rank)``, rank from 1.

    Ties break on first appearance so the result does not depend on dict or set order.
    """
    scores: dict[K, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return stable_by_score(scores)


def stable_by_score(scores: dict[K, float]) -> list[tuple[K, float]]:
    """Items by descending score; equal scores keep insertion order (dicts keep it)."""
    return sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable, ties in order
