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

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, exists, func, select
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t

__all__ = [
    "BUMP",
    "HORIZON_COLUMNS",
    "KNOWLEDGE_KINDS",
    "Horizon",
    "bump_revision",
    "current_revision",
    "horizon",
    "horizon_of",
]

_r = t.knowledge_revisions.c
BUMP = (  # bound by "tenant" and "agent"; a write may run it as a CTE of its own statement
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

# All in one statement: one snapshot of the database, so the revision and the event
# horizon agree as the reads did in turn (the revision first), in one round trip.
_e = t.events.c
_AGENT_EVENTS = (_e.tenant == bindparam("tenant"), _e.agent == bindparam("agent"))
HORIZON_COLUMNS = (
    func.coalesce(_CURRENT.scalar_subquery(), 0),
    select(func.coalesce(func.max(_e.id), 0)).where(*_AGENT_EVENTS).scalar_subquery(),
    # (a partial index on retired events: events_repo.last_retired_revision's lookup)
    select(func.coalesce(func.max(_e.retired_rev), 0))
    .where(*_AGENT_EVENTS, _e.retired_rev.is_not(None))
    .scalar_subquery(),
    # Whether the agent has any row of each kind of knowledge: one it has none of is not
    # read by the snapshot (see Horizon.without).
    *(
        exists().where(table.c.tenant == bindparam("tenant"), table.c.agent == bindparam("agent"))
        for table in (t.decisions, t.handoff_notes, t.summaries, t.memories)
    ),
)  # bound by "tenant" and "agent"
KNOWLEDGE_KINDS = ("decisions", "handoffs", "summaries", "memories")  # in that order
_HORIZON = select(*HORIZON_COLUMNS)


class Horizon(NamedTuple):
    """What bounds a compile's snapshot, read at one point in time."""

    revision: int  # the agent's last committed knowledge revision (0: none yet)
    max_event_id: int  # its newest event's id (0: none)
    last_retired: int  # the revision at which an event of it was last retired (0: never)
    # The kinds of knowledge (KNOWLEDGE_KINDS) of which the agent had no row at all. A
    # read of one at ``revision`` finds none, whenever it runs: a row written since was
    # written at a later revision (revisions commit in order), which that read leaves out.
    without: frozenset[str] = frozenset()


def bump_revision(conn: Connection, tenant: str, agent: str) -> int:
    """The revision this transaction writes at (the agent's row stays locked until commit)."""
    return int(conn.execute(BUMP, {"tenant": tenant, "agent": agent}).scalar_one())


def current_revision(conn: Connection, tenant: str, agent: str) -> int:
    """The agent's last committed revision (0 before its first knowledge write)."""
    value = conn.execute(_CURRENT, {"tenant": tenant, "agent": agent}).scalar_one_or_none()
    return 0 if value is None else int(value)


def horizon(conn: Connection, tenant: str, agent: str) -> Horizon:
    """The agent's :class:`Horizon`, in one statement."""
    return horizon_of(conn.execute(_HORIZON, {"tenant": tenant, "agent": agent}).one())


def horizon_of(values: Sequence[Any]) -> Horizon:
    """The :class:`Horizon` of a row of :data:`HORIZON_COLUMNS`' values."""
    revision, max_id, retired, *held = values
    without = frozenset(k for k, h in zip(KNOWLEDGE_KINDS, held, strict=True) if not h)
    return Horizon(int(revision), int(max_id), int(retired), without)
