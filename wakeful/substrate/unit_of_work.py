"""A unit of work: one transaction on one connection, and every repository bound to it.

``TenantStore.unit()`` opens it (``engine.begin()``) and commits when the ``with`` block
ends, or rolls back when it raises. What the block reads and writes through the unit's
repositories (``uow.events``, ``uow.knowledge``, ...) is one transaction: several reads see
one snapshot of the substrate for one pool checkout, several writes are atomic. Each
repository binds the unit's tenant in every statement it sends, so a unit cannot reach
another tenant's rows.
"""

from __future__ import annotations

from sqlalchemy import Connection

from wakeful.substrate.agents_repo import AgentsRepo
from wakeful.substrate.blobs import BlobsRepo
from wakeful.substrate.claims import ClaimsRepo
from wakeful.substrate.consolidation_repo import ConsolidationRepo
from wakeful.substrate.events_repo import EventsRepo
from wakeful.substrate.index_cursors_repo import IndexCursorsRepo
from wakeful.substrate.knowledge import KnowledgeRepo
from wakeful.substrate.registry_repo import RegistryRepo
from wakeful.substrate.wakes_repo import WakesRepo

__all__ = ["UnitOfWork"]


class UnitOfWork:
    """The repositories of one tenant, bound to one open transaction's connection."""

    def __init__(self, conn: Connection, tenant: str) -> None:
        self.conn = conn
        self.tenant = tenant
        self.agents = AgentsRepo(conn, tenant)
        self.wakes = WakesRepo(conn, tenant)
        self.events = EventsRepo(conn, tenant)
        self.cursors = IndexCursorsRepo(conn, tenant)
        self.knowledge = KnowledgeRepo(conn, tenant)
        self.registry = RegistryRepo(conn, tenant)
        self.consolidation = ConsolidationRepo(conn, tenant)
        self.blobs = BlobsRepo(conn, tenant)
        self.claims = ClaimsRepo(conn, tenant)
