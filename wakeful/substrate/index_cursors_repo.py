"""Vector index cursors: how far each agent's events are indexed into each collection.

:class:`IndexCursorsRepo` works on one tenant's cursors, on the connection it is given (a
unit of work's: :mod:`wakeful.substrate.unit_of_work`). A cursor only moves forward, except
when it is reset because the vectors behind it were lost.
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["IndexCursorsRepo"]


class IndexCursorsRepo(TenantRepo):
    """One tenant's vector index cursors, on one connection."""

    def index_cursor(self, agent: str, collection: str) -> int:
        """The last event id of ``agent`` indexed into ``collection`` (0: none yet)."""
        c = t.index_cursors.c
        value = self.conn.execute(
            select(c.last_event_id).where(
                c.tenant == self.tenant, c.agent == agent, c.collection == collection
            )
        ).scalar_one_or_none()
        return int(value or 0)

    def set_index_cursor(self, agent: str, collection: str, last_event_id: int) -> None:
        """Move the cursor forward; a cursor never moves back, except with ``reset``."""
        stmt = insert(t.index_cursors).values(
            tenant=self.tenant, agent=agent, collection=collection, last_event_id=last_event_id
        )
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["tenant", "agent", "collection"],
                set_={
                    "last_event_id": func.greatest(
                        t.index_cursors.c.last_event_id, stmt.excluded.last_event_id
                    ),
                    "updated_at": func.now(),
                },
            )
        )

    def reset_index_cursor(self, agent: str, collection: str) -> None:
        """Forget how far ``agent`` is indexed (its vectors were lost): index from scratch."""
        c = t.index_cursors.c
        self.conn.execute(
            update(t.index_cursors)
            .where(c.tenant == self.tenant, c.agent == agent, c.collection == collection)
            .values(last_event_id=0, updated_at=func.now())
        )
