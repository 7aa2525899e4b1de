"""Vector stores: one protocol, an in-memory fake, Qdrant Edge (embedded) and Qdrant server.

The backends are imported lazily so that importing the protocol does not load an engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wakeful.substrate.vectors.base import (
    CollectionMismatchError,
    CollectionSpec,
    Distance,
    EmbedderMismatchError,
    FusionMode,
    SeqKey,
    SparseVector,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorStore,
    point_id,
    rrf_fuse,
)
from wakeful.substrate.vectors.memory import MemoryVectorStore

if TYPE_CHECKING:
    from wakeful.substrate.vectors.edge import EdgeVectorStore
    from wakeful.substrate.vectors.server import ServerVectorStore

__all__ = [
    "CollectionMismatchError",
    "CollectionSpec",
    "Distance",
    "EdgeVectorStore",
    "EmbedderMismatchError",
    "FusionMode",
    "MemoryVectorStore",
    "SeqKey",
    "ServerVectorStore",
    "SparseVector",
    "VectorHit",
    "VectorPoint",
    "VectorQuery",
    "VectorStore",
    "point_id",
    "rrf_fuse",
]


def __getattr__(name: str) -> Any:
    if name == "EdgeVectorStore":
        from wakeful.substrate.vectors.edge import EdgeVectorStore

        return EdgeVectorStore
    if name == "ServerVectorStore":
        from wakeful.substrate.vectors.server import ServerVectorStore

        return ServerVectorStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
