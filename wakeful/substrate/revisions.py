"""Knowledge revisions: transaction time for an agent's knowledge, race-free.

Every write that adds or retires knowledge — a memory, a decision, a summary, a handoff
note, a retired event, a verification mark — bumps the agent's revision in the same
transaction and stamps its rows with it. The bump is an upsert that holds the agent's row
lock until commit, so revisions commit in order: a reader that reads revision ``R`` first
and then keeps rows written at or before ``R`` and not retired at or before ``R`` sees
exactly the knowledge of revision ``R``, whatever commits while it reads — and so does a
replay months later.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, func, select
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t

__all__ = ["bump_revision", "current_revision", "revision_and_max_event_id"]

_r = t.knowledge_revisions.c
_BUMP = (
    insert(t.knowledge_revisions)
    .values(tenant=bindparam("tenant"), agent=bindparam("agent"), revision=1)
    .on_conflict_do_update(
        index_elements=["tenant", "agent"], set_={"revision": t.knowledge_revisions.c.revision + 1}
    )
    .returning(_r.revision)
)
_CURRENT = select(_r.revision).where(
    _r.tenant == bindparam("tenant"), _r.agent == bindparam("agent")
)

# Both in one statement: one snapshot of the database, so the revision and the event
# horizon agree as the two reads did in turn (the revision first), in one round trip.
_e = t.events.c
_REVISION_AND_MAX_EVENT_ID = select(
    func.coalesce(_CURRENT.scalar_subquery(), 0),
    select(func.coalesce(func.max(_e.id), 0))
    .where(_e.tenant == bindparam("tenant"), _e.agent == bindparam("agent"))
    .scalar_subquery(),
)


def bump_revision(conn: Connection, tenant: str, agent: str) -> int:
    """The revision this transaction writes at (the agent's row stays locked until commit)."""
    return int(conn.execute(_BUMP, {"tenant": tenant, "agent": agent}).scalar_one())


def current_revision(conn: Connection, tenant: str, agent: str) -> int:
    """The agent's last committed revision (0 before its first knowledge write)."""
    value = conn.execute(_CURRENT, {"tenant": tenant, "agent": agent}).scalar_one_or_none()
    return 0 if value is None else int(value)


def revision_and_max_event_id(conn: Connection, tenant: str, agent: str) -> tuple[int, int]:
    """The agent's last committed revision and its newest event's id (0 for none), read
    at one point in time: what a snapshot is bounded by."""
    revision, max_id = conn.execute(
        _REVISION_AND_MAX_EVENT_ID, {"tenant": tenant, "agent": agent}
    ).one()
    return int(revision), int(max_id)
