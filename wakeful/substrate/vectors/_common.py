"""Checks and encodings every backend shares, so that the backends cannot drift apart."""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.errors import UserError
from wakeful.substrate.lexical import Bm25Encoder, SparseVector
from wakeful.substrate.vectors.base import (
    CollectionSpec,
    EmbedderMismatchError,
    FusionMode,
    VectorPoint,
    VectorQuery,
)


def require_spec(spec: CollectionSpec | None, backend: str) -> CollectionSpec:
    if spec is None:
        raise UserError(f"{backend}: call ensure_collection(spec) before using the store")
    return spec


def check_points(spec: CollectionSpec, points: Sequence[VectorPoint]) -> None:
    for p in points:
        if p.embedder != spec.embedder:
            raise EmbedderMismatchError(
                f"chunk {p.chunk_id!r} was embedded by {p.embedder!r} but collection "
                f"{spec.name!r} holds {spec.embedder!r} vectors; embed it with {spec.embedder!r}"
            )
        if len(p.vector) != spec.dim:
            raise EmbedderMismatchError(
                f"chunk {p.chunk_id!r} has a {len(p.vector)}-d vector; collection "
                f"{spec.name!r} expects {spec.dim}-d vectors from {spec.embedder!r}"
            )


def check_query(spec: CollectionSpec, q: VectorQuery) -> None:
    if q.mode is FusionMode.SPARSE:
        return
    if q.embedder != spec.embedder:
        raise EmbedderMismatchError(
            f"query vector comes from embedder {q.embedder!r} but collection {spec.name!r} "
            f"holds {spec.embedder!r} vectors; embed the query with {spec.embedder!r}"
        )
    if q.dense is not None and len(q.dense) != spec.dim:
        raise EmbedderMismatchError(
            f"query vector is {len(q.dense)}-d; collection {spec.name!r} expects {spec.dim}-d"
        )


def check_encoder(spec: CollectionSpec, encoder: Bm25Encoder) -> None:
    if encoder.name != spec.sparse_encoder:
        raise EmbedderMismatchError(
            f"collection {spec.name!r} holds sparse vectors of {spec.sparse_encoder!r}; "
            f"the store was given encoder {encoder.name!r}"
        )


def point_sparse(encoder: Bm25Encoder, p: VectorPoint) -> SparseVector:
    return p.sparse if p.sparse is not None else encoder.encode_document(p.text)


def query_sparse(encoder: Bm25Encoder, q: VectorQuery) -> SparseVector:
    if q.sparse is not None:
        return q.sparse
    return encoder.encode_query(q.text or "")
