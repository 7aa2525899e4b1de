"""BM25 statistics and chunk positions of one (tenant, agent), kept by the Edge store.

Why the store keeps them rather than the engine: BM25's IDF must be computed over the
caller's own points (one tenant's corpus must never shift another's scores). Qdrant Edge can
do that with a corpus filter, but it does so on *every* query by walking each query term's
posting list through the filter - at 100k chunks that is most of a retrieval's time. The
statistics change only when the scope's points change, and every change passes through the
store, so the store keeps them: the number of points and each term's document frequency,
read from the shard once on the first read of a scope, then kept current by every upsert and
delete. Queries carry ``weight x IDF`` per term and the engine computes a plain sparse dot
product over its inverted index - Okapi BM25 over the scope's points, exactly as before.

The same scan records where each chunk sits (session, seq) and its point id, so fetching the
turns around a hit is a lookup by id rather than a filtered scroll.

Memory: a few hundred bytes per chunk of each scope read since the store was opened; at most
``max_scopes`` scopes are kept (least recently used first out, rebuilt on the next read).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wakeful.substrate.lexical import SparseVector
from wakeful.substrate.vectors.base import SeqKey

__all__ = ["Catalogs", "PointFacts", "ScopeCatalog", "bm25_idf"]

Scope = tuple[str, str]


def bm25_idf(points: int, containing: int) -> float:
    """Qdrant's IDF modifier, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, so scores match the
    server backend (which lets the engine apply it) and the in-memory fake."""
    return math.log(1.0 + (points - containing + 0.5) / (containing + 0.5))


@dataclass(frozen=True, slots=True)
class PointFacts:
    """What the catalog needs of one stored point."""

    point_id: str
    tenant: str
    agent: str
    position: SeqKey | None
    terms: tuple[int, ...]

    @classmethod
    def from_record(cls, point_id: str, payload: Mapping[str, Any], sparse: Any) -> PointFacts:
        """From a shard record read with the scope fields and the sparse vector."""
        session = payload.get("session_id")
        position = SeqKey(session, int(payload["seq"])) if session is not None else None
        terms = tuple(sparse.indices) if sparse is not None else ()
        return cls(point_id, payload["tenant"], payload["agent"], position, terms)

    @classmethod
    def of(
        cls, point_id: str, tenant: str, agent: str, seq: int, session: str | None, sv: SparseVector
    ) -> PointFacts:
        position = SeqKey(session, seq) if session is not None else None
        return cls(point_id, tenant, agent, position, sv.indices)


@dataclass
class ScopeCatalog:
    """Point count, document frequencies and positions of one (tenant, agent)."""

    points: int = 0
    df: dict[int, int] = field(default_factory=dict)
    positions: dict[SeqKey, str] = field(default_factory=dict)

    def add(self, p: PointFacts) -> None:
        self.points += 1
        df = self.df
        for term in p.terms:
            df[term] = df.get(term, 0) + 1
        if p.position is not None:
            self.positions[p.position] = p.point_id

    def remove(self, p: PointFacts) -> None:
        self.points -= 1
        df = self.df
        for term in p.terms:
            left = df.get(term, 0) - 1
            if left > 0:
                df[term] = left
            else:
                df.pop(term, None)
        if p.position is not None and self.positions.get(p.position) == p.point_id:
            del self.positions[p.position]

    def weigh(self, query: SparseVector) -> SparseVector:
        """The query with each term's weight multiplied by its IDF in this scope."""
        n = self.points
        values = tuple(
            w * bm25_idf(n, self.df.get(i, 0))
            for i, w in zip(query.indices, query.values, strict=True)
        )
        return SparseVector(query.indices, values)

    def point_ids(self, keys: Sequence[SeqKey]) -> list[str]:
        """Point ids at the given positions, in ``keys`` order; unknown positions skipped."""
        found = (self.positions.get(k) for k in dict.fromkeys(keys))
        return [pid for pid in found if pid is not None]


class Catalogs:
    """Catalogs of the scopes read lately; others are rebuilt from the shard when needed."""

    def __init__(self, max_scopes: int = 64) -> None:
        if max_scopes <= 0:
            raise ValueError(f"max_scopes must be positive, got {max_scopes}")
        self._max = max_scopes
        self._loaded: OrderedDict[Scope, ScopeCatalog] = OrderedDict()

    def get(self, scope: Scope) -> ScopeCatalog | None:
        catalog = self._loaded.get(scope)
        if catalog is not None:
            self._loaded.move_to_end(scope)
        return catalog

    def put(self, scope: Scope, points: Iterable[PointFacts]) -> ScopeCatalog:
        catalog = ScopeCatalog()
        for p in points:
            catalog.add(p)
        self._loaded[scope] = catalog
        while len(self._loaded) > self._max:
            self._loaded.popitem(last=False)
        return catalog

    def any(self) -> bool:
        """Whether any scope is loaded (writes must then keep its statistics current)."""
        return bool(self._loaded)

    def replace(self, old: Iterable[PointFacts], new: Iterable[PointFacts]) -> None:
        """Apply a write the shard has accepted: ``old`` points left, ``new`` ones arrived.
        Scopes not loaded are skipped; they are read afresh when next needed."""
        for p in old:
            catalog = self._loaded.get((p.tenant, p.agent))
            if catalog is not None:
                catalog.remove(p)
        for p in new:
            catalog = self._loaded.get((p.tenant, p.agent))
            if catalog is not None:
                catalog.add(p)

    def clear(self) -> None:
        self._loaded.clear()
