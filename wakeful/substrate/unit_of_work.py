"""A unit of work: one transaction on one connection, and every repository bound to it.

``TenantStore.unit()`` opens it (``engine.begin()``) and commits when the ``with`` block
ends, or rolls back when it raises. What the block reads and writes through the unit's
repositories (``uow.events``, ``uow.knowledge``, ...) is one transaction: several reads
share one connection and one pool checkout, several writes are atomic, and a row lock one
write takes (a knowledge revision's) is held until the unit ends. Each
repository binds the unit's tenant in every statement it sends, so a unit cannot reach
another tenant's rows.
"""

from __future__ import annotations

from functools import cached_property

from sqlalchemy import Connection

from wakeful.substrate.agents_repo import AgentsRepo
from wakeful.substrate.blobs import BlobsRepo
from wakeful.substrate.claims import ClaimsRepo
from wakeful.substrate.consolidation_repo import ConsolidationRepo
from wakeful.substrate.cooldowns_repo import CooldownsRepo
from wakeful.substrate.documents_repo import DocumentsRepo
from wakeful.substrate.events_repo import EventsRepo
from wakeful.substrate.index_cursors_repo import IndexCursorsRepo
from wakeful.substrate.knowledge import KnowledgeRepo
from wakeful.substrate.registry_repo import RegistryRepo
from wakeful.substrate.stream_repo import StreamRepo
from wakeful.substrate.wakes_repo import WakesRepo

__all__ = ["UnitOfWork"]


class UnitOfWork:
    """The repositories of one tenant, bound to one open transaction's connection.

    Each is made on first use: a one-shot call of ``TenantStore`` opens a unit for one
    repository method, and should not pay for the other repositories."""

    def __init__(self, conn: Connection, tenant: str) -> None:
        self.conn = conn
        self.tenant = tenant

    @cached_property
    def agents(self) -> AgentsRepo:
        return AgentsRepo(self.conn, self.tenant)

    @cached_property
    def wakes(self) -> WakesRepo:
        """Wakes, and their compiles and model calls (the ledger)."""
        return WakesRepo(self.conn, self.tenant)

    @cached_property
    def events(self) -> EventsRepo:
        return EventsRepo(self.conn, self.tenant)

    @cached_property
    def documents(self) -> DocumentsRepo:
        """The agent's documents, as chunks by path and version."""
        return DocumentsRepo(self.conn, self.tenant)

    @cached_property
    def cursors(self) -> IndexCursorsRepo:
        """How far each agent's events are in the vector index."""
        return IndexCursorsRepo(self.conn, self.tenant)

    @cached_property
    def knowledge(self) -> KnowledgeRepo:
        """Handoff notes, decisions, memories, summaries, and the knowledge revision."""
        return KnowledgeRepo(self.conn, self.tenant)

    @cached_property
    def registry(self) -> RegistryRepo:
        """The decision registry by key."""
        return RegistryRepo(self.conn, self.tenant)

    @cached_property
    def consolidation(self) -> ConsolidationRepo:
        return ConsolidationRepo(self.conn, self.tenant)

    @cached_property
    def blobs(self) -> BlobsRepo:
        return BlobsRepo(self.conn, self.tenant)

    @cached_property
    def cooldowns(self) -> CooldownsRepo:
        """Provider routes a tenant's model calls skip for now (failover)."""
        return CooldownsRepo(self.conn, self.tenant)

    @cached_property
    def stream(self) -> StreamRepo:
        """What streaming model calls have said so far (``wake_stream``)."""
        return StreamRepo(self.conn, self.tenant)

    @cached_property
    def claims(self) -> ClaimsRepo:
        """Webhook delivery claims."""
        return ClaimsRepo(self.conn, self.tenant)
