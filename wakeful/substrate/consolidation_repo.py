"""Repository methods consolidation needs: exact-span commits, memory marks, its log.

:class:`ConsolidationRepo` works on one tenant's rows, on the connection it is given (a unit
of work's: :mod:`wakeful.substrate.unit_of_work`). The one subtle method is
:meth:`~ConsolidationRepo.commit_summary`: it locks the rows a summary replaces, so two
consolidations racing over overlapping history write one summary, and it retires exactly the
events the summary read — never an id range, because an event committed late by a
concurrent wake could fall inside a range without being summarised.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.records import (
    CompileRecord,
    ConsolidationLogRecord,
    DecisionRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.revisions import bump_revision
from wakeful.substrate.tenant_repo import TenantRepo


def _strip(m: Any, *drop: str) -> dict[str, Any]:
    return {k: m[k] for k in m.keys() if k not in ("tenant", *drop)}


def memory_from_row(m: Any, revision: int | None = None) -> MemoryRecord:
    """A memory row as a record, its verification the last mark made by ``revision`` (all
    marks when None) or, before any, the one it was written with."""
    d = _strip(m)
    for mark in d.pop("marks", None) or ():
        if revision is None or mark["rev"] <= revision:
            d["verification"] = mark["v"]
    return MemoryRecord.model_validate(d)


def insert_summary(conn: Connection, tenant: str, rec: SummaryRecord, rev: int) -> Row[Any]:
    """Store ``rec`` at knowledge revision ``rev`` (once per step key: a retry finds the
    first) and return its row."""
    conn.execute(
        insert(t.summaries)
        .values(tenant=tenant, recorded_rev=rev, **rec.model_dump(exclude={"id", "created_at"}))
        .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
    )
    s = t.summaries.c
    return conn.execute(
        select(t.summaries).where(s.tenant == tenant, s.step_key == rec.step_key)
    ).one()


class ConsolidationRepo(TenantRepo):
    """What consolidation reads and writes of one tenant, on one connection."""

    # --- reading history ------------------------------------------------------------------

    def events_by_ids(self, agent: str, ids: Sequence[int]) -> list[StoredEvent]:
        """The events with these ids (retired ones too), in id order."""
        e = t.events.c
        q = select(t.events).where(e.tenant == self.tenant, e.agent == agent, e.id.in_(list(ids)))
        return [
            StoredEvent.model_validate(_strip(r._mapping, "agent"))
            for r in self.conn.execute(q.order_by(e.id))
        ]

    def session_bounds(self, agent: str) -> list[dict[str, Any]]:
        """Per session: first and last event id and the last event's time."""
        e = t.events.c
        q = (
            select(
                e.session_id,
                func.min(e.id).label("first_id"),
                func.max(e.id).label("last_id"),
                func.max(e.event_time).label("last_at"),
            )
            .where(e.tenant == self.tenant, e.agent == agent)
            .group_by(e.session_id)
            .order_by(func.min(e.id))
        )
        return [dict(r._mapping) for r in self.conn.execute(q)]

    def summaries_by_ids(self, agent: str, ids: Sequence[int]) -> list[SummaryRecord]:
        c = t.summaries.c
        q = select(t.summaries).where(
            c.tenant == self.tenant, c.agent == agent, c.id.in_(list(ids))
        )
        return [
            SummaryRecord.model_validate(_strip(r._mapping))
            for r in self.conn.execute(q.order_by(c.id))
        ]

    def all_decisions(self, agent: str) -> list[DecisionRecord]:
        """Every registry entry, superseded and expired ones too."""
        c = t.decisions.c
        q = select(t.decisions).where(c.tenant == self.tenant, c.agent == agent)
        return [
            DecisionRecord.model_validate(_strip(r._mapping))
            for r in self.conn.execute(q.order_by(c.decision_id))
        ]

    def memory_history(self, agent: str) -> list[MemoryRecord]:
        """Every memory ever written, live or not, oldest first."""
        c = t.memories.c
        q = select(t.memories).where(c.tenant == self.tenant, c.agent == agent).order_by(c.id)
        return [memory_from_row(r._mapping) for r in self.conn.execute(q)]

    def recent_compiles(self, agent: str, limit: int) -> list[CompileRecord]:
        """The agent's newest compiles, newest first."""
        c = t.compiles.c
        q = (
            select(t.compiles)
            .where(c.tenant == self.tenant, c.agent == agent)
            .order_by(c.created_at.desc(), c.step_key.desc())
            .limit(limit)
        )
        return [
            CompileRecord.model_validate(_strip(r._mapping, "created_at"))
            for r in self.conn.execute(q)
        ]

    # --- writing summaries ----------------------------------------------------------------

    def commit_summary(
        self,
        rec: SummaryRecord,
        *,
        at: datetime,
        event_ids: Sequence[int] = (),
        child_ids: Sequence[int] = (),
    ) -> tuple[SummaryRecord | None, str]:
        """Insert a summary and retire exactly what it replaces, in one transaction.

        ``event_ids`` (raw events) are retired with ``retired_by = summary:<id>``;
        ``child_ids`` (summaries rolled up) get ``superseded_by = <id>``. Returns the summary
        and ``"accepted"``; the earlier summary and ``"exists"`` when this step key already
        committed; ``None`` and ``"raced: ..."`` when another summary took part of the span.
        """
        e, s = t.events.c, t.summaries.c
        if event_ids:
            rows = self.conn.execute(
                select(e.id, e.retired_at, e.retired_by)
                .where(e.tenant == self.tenant, e.agent == rec.agent, e.id.in_(list(event_ids)))
                .order_by(e.id)
                .with_for_update()
            ).all()
            if len(rows) != len(set(event_ids)):
                found = {r.id for r in rows}
                lost = sorted(set(event_ids) - found)
                return None, f"unknown events {lost} for agent {rec.agent!r}"
            holders = {
                None if r.retired_at is None else (r.retired_by or "an unnamed retirement")
                for r in rows
            }
        else:
            kids = self.conn.execute(
                select(s.id, s.superseded_by)
                .where(s.tenant == self.tenant, s.agent == rec.agent, s.id.in_(list(child_ids)))
                .order_by(s.id)
                .with_for_update()
            ).all()
            if len(kids) != len(set(child_ids)):
                return None, f"unknown summaries among {sorted(child_ids)}"
            holders = {
                None if r.superseded_by is None else f"summary:{r.superseded_by}" for r in kids
            }
        existing = self.conn.execute(
            select(t.summaries).where(s.tenant == self.tenant, s.step_key == rec.step_key)
        ).first()
        if existing is not None and holders == {f"summary:{existing.id}"}:
            return SummaryRecord.model_validate(_strip(existing._mapping)), "exists"
        taken = sorted(h for h in holders if h is not None)
        if taken:
            return None, f"raced: part of the span is already replaced by {', '.join(taken)}"
        rev = bump_revision(self.conn, self.tenant, rec.agent)
        row = insert_summary(self.conn, self.tenant, rec, rev)
        if event_ids:
            self.conn.execute(
                update(t.events)
                .where(e.tenant == self.tenant, e.agent == rec.agent, e.id.in_(list(event_ids)))
                .values(retired_at=at, retired_by=f"summary:{row.id}", retired_rev=rev)
            )
        else:
            self.conn.execute(
                update(t.summaries)
                .where(s.tenant == self.tenant, s.id.in_(list(child_ids)))
                .values(superseded_by=row.id, superseded_rev=rev)
            )
        return SummaryRecord.model_validate(_strip(row._mapping)), "accepted"

    # --- memory marks -----------------------------------------------------------------------

    def mark_memories(self, agent: str, ids: Sequence[int], verification: str) -> int:
        """Mark the verification status of live memories (e.g. ``stale``).

        A mark is appended, with the revision that made it, never written over the status
        the memory was stored with: a snapshot read at an earlier revision sees the old one.
        """
        c = t.memories.c
        rev = bump_revision(self.conn, self.tenant, agent)
        mark = func.jsonb_build_array(func.jsonb_build_object("v", verification, "rev", rev))
        done = self.conn.execute(
            update(t.memories)
            .where(c.tenant == self.tenant, c.agent == agent, c.id.in_(list(ids)))
            .where(c.invalidated_at.is_(None))
            .values(marks=c.marks.op("||")(mark))
        )
        return int(done.rowcount)

    def retire_memories(self, agent: str, ids: Sequence[int], at: datetime) -> int:
        """End the validity interval of live memories; the rows stay."""
        c = t.memories.c
        rev = bump_revision(self.conn, self.tenant, agent)
        done = self.conn.execute(
            update(t.memories)
            .where(c.tenant == self.tenant, c.agent == agent, c.id.in_(list(ids)))
            .where(c.invalidated_at.is_(None))
            .values(invalidated_at=at, invalidated_rev=rev)
        )
        return int(done.rowcount)

    # --- the consolidation log -----------------------------------------------------------

    def log_consolidation(self, rec: ConsolidationLogRecord) -> ConsolidationLogRecord:
        """Append a log entry; a retry with the same step key returns the first one."""
        c = t.consolidation_log.c
        self.conn.execute(
            insert(t.consolidation_log)
            .values(tenant=self.tenant, **rec.model_dump(exclude={"id", "created_at"}))
            .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
        )
        row = self.conn.execute(
            select(t.consolidation_log).where(c.tenant == self.tenant, c.step_key == rec.step_key)
        ).one()
        return ConsolidationLogRecord.model_validate(_strip(row._mapping))

    def logged(self, step_key: str) -> ConsolidationLogRecord | None:
        c = t.consolidation_log.c
        row = self.conn.execute(
            select(t.consolidation_log).where(c.tenant == self.tenant, c.step_key == step_key)
        ).first()
        return None if row is None else ConsolidationLogRecord.model_validate(_strip(row._mapping))

    def consolidation_log(
        self, agent: str, *, limit: int = 100, action: str | None = None
    ) -> list[ConsolidationLogRecord]:
        """The newest ``limit`` entries, oldest first."""
        c = t.consolidation_log.c
        q = select(t.consolidation_log).where(c.tenant == self.tenant, c.agent == agent)
        if action is not None:
            q = q.where(c.action == action)
        rows = self.conn.execute(q.order_by(c.id.desc()).limit(limit)).all()
        return [ConsolidationLogRecord.model_validate(_strip(r._mapping)) for r in reversed(rows)]
