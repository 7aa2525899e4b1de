"""Handoff notes, the load-bearing registry, memories and summaries.

A mixin of :class:`wakeful.substrate.store.TenantStore`: the same tenant scoping and the same
idempotent ``step_key`` writes. Nothing here is ever overwritten: a newer memory supersedes an
older one by pointer and validity interval; a newer decision supersedes by ``superseded_by``.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, or_, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.consolidation_repo import ConsolidationMixin
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    SummaryRecord,
)


class KnowledgeMixin(ConsolidationMixin):
    name: str

    def tx(self) -> AbstractContextManager[Connection]:  # provided by TenantStore
        raise NotImplementedError

    # --- handoff notes ------------------------------------------------------------------

    def write_handoff(self, rec: HandoffRecord) -> HandoffRecord:
        values = {
            "tenant": self.name,
            "agent": rec.agent,
            "session_id": rec.session_id,
            "wake_id": rec.wake_id,
            "step_key": rec.step_key,
            "body": rec.body.model_dump(),
            "text": rec.body.render(),
        }
        with self.tx() as conn:
            row = conn.execute(
                insert(t.handoff_notes)
                .values(**values)
                .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
                .returning(*t.handoff_notes.c)
            ).first()
            if row is None:  # a retry: the first note stands
                row = conn.execute(
                    select(t.handoff_notes).where(
                        t.handoff_notes.c.tenant == self.name,
                        t.handoff_notes.c.step_key == rec.step_key,
                    )
                ).one()
        return _handoff(row._mapping)

    def latest_handoff(
        self,
        agent: str,
        *,
        before: datetime | None = None,
        max_id: int | None = None,
        other_than_session: str | None = None,
    ) -> HandoffRecord | None:
        q = _latest_handoff_query(
            other_than_session is not None, before is not None, max_id is not None
        )
        params = {
            "tenant": self.name,
            "agent": agent,
            "session": other_than_session,
            "before": before,
            "max_id": max_id,
        }
        with self.tx() as conn:
            row = conn.execute(q, params).first()
        return None if row is None else _handoff(row._mapping)

    def handoffs(self, agent: str) -> list[HandoffRecord]:
        with self.tx() as conn:
            rows = conn.execute(
                select(t.handoff_notes)
                .where(t.handoff_notes.c.tenant == self.name, t.handoff_notes.c.agent == agent)
                .order_by(t.handoff_notes.c.id)
            )
            return [_handoff(r._mapping) for r in rows]

    # --- load-bearing registry ----------------------------------------------------------

    def register_decision(self, rec: DecisionRecord) -> DecisionRecord:
        """Add a decision; an existing id is kept as first written (ids are never reused)."""
        with self.tx() as conn:
            conn.execute(
                insert(t.decisions)
                .values(tenant=self.name, **rec.model_dump(exclude={"created_at"}))
                .on_conflict_do_nothing(index_elements=["tenant", "agent", "decision_id"])
            )
        return rec

    def supersede_decision(self, agent: str, decision_id: str, by: str) -> None:
        with self.tx() as conn:
            conn.execute(
                update(t.decisions)
                .where(
                    t.decisions.c.tenant == self.name,
                    t.decisions.c.agent == agent,
                    t.decisions.c.decision_id == decision_id,
                )
                .values(superseded_by=by)
            )

    def live_decisions(self, agent: str, at: datetime) -> list[DecisionRecord]:
        params = {"tenant": self.name, "agent": agent, "at": at}
        with self.tx() as conn:
            return [_decision(r._mapping) for r in conn.execute(_LIVE_DECISIONS, params)]

    # --- memories -----------------------------------------------------------------------

    def remember(self, rec: MemoryRecord) -> MemoryRecord:
        """Store a memory; a live memory on the same key is superseded, never overwritten."""
        c = t.memories.c
        with self.tx() as conn:
            done = conn.execute(
                select(t.memories).where(c.tenant == self.name, c.step_key == rec.step_key)
            ).first()
            if done is not None:  # a retry: superseding again would retire the newer memories
                return _memory(done._mapping)
            prior = (
                conn.execute(
                    select(c.id).where(
                        c.tenant == self.name,
                        c.agent == rec.agent,
                        c.key == rec.key,
                        c.invalidated_at.is_(None),
                        c.step_key != rec.step_key,
                    )
                )
                .scalars()
                .all()
            )
            values = rec.model_dump(exclude={"id"})
            values["supersedes"] = max(prior) if prior else rec.supersedes
            conn.execute(
                insert(t.memories)
                .values(tenant=self.name, **values)
                .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
            )
            if prior:
                conn.execute(
                    update(t.memories)
                    .where(c.tenant == self.name, c.id.in_(prior))
                    .values(invalidated_at=rec.captured_at)
                )
            row = conn.execute(
                select(t.memories).where(c.tenant == self.name, c.step_key == rec.step_key)
            ).one()
        return _memory(row._mapping)

    def memories(self, agent: str, *, at: datetime | None = None) -> list[MemoryRecord]:
        """Memories valid at ``at`` (all live ones when None), oldest first."""
        params = {"tenant": self.name, "agent": agent, "at": at}
        with self.tx() as conn:
            rows = conn.execute(_memories_query(at is not None), params)
            return [_memory(r._mapping) for r in rows]

    # --- summaries ----------------------------------------------------------------------

    def add_summary(self, rec: SummaryRecord, *, retire_span: bool, at: datetime) -> SummaryRecord:
        """Add a summary; when its gate passed, retire the raw span in the same transaction."""
        c = t.summaries.c
        with self.tx() as conn:
            conn.execute(
                insert(t.summaries)
                .values(tenant=self.name, **rec.model_dump(exclude={"id", "created_at"}))
                .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
            )
            row = conn.execute(
                select(t.summaries).where(c.tenant == self.name, c.step_key == rec.step_key)
            ).one()
            if retire_span:
                e = t.events.c
                conn.execute(
                    update(t.events)
                    .where(
                        and_(
                            e.tenant == self.name,
                            e.agent == rec.agent,
                            e.id >= rec.span_start,
                            e.id <= rec.span_end,
                            e.retired_at.is_(None),
                        )
                    )
                    .values(retired_at=at, retired_by=f"summary:{row.id}")
                )
        return _summary(row._mapping)

    def summaries(self, agent: str, *, max_id: int | None = None) -> list[SummaryRecord]:
        params = {"tenant": self.name, "agent": agent, "max_id": max_id}
        with self.tx() as conn:
            rows = conn.execute(_summaries_query(max_id is not None), params)
            return [_summary(r._mapping) for r in rows]


# The reads every compile makes are built once per shape, with bound parameters: a
# statement rebuilt per call cost about as much CPU as its round trip (see store.py).
_d = t.decisions.c
_LIVE_DECISIONS = (
    select(t.decisions)
    .where(_d.tenant == bindparam("tenant"), _d.agent == bindparam("agent"))
    .where(_d.superseded_by.is_(None))
    .where(or_(_d.expires_at.is_(None), _d.expires_at > bindparam("at")))
    .where(_d.created_at <= bindparam("at"))
    .order_by(_d.decision_id)
)


@functools.cache
def _latest_handoff_query(other_session: bool, before: bool, upto: bool) -> Select[Any]:
    h = t.handoff_notes.c
    q = select(t.handoff_notes).where(
        h.tenant == bindparam("tenant"), h.agent == bindparam("agent")
    )
    if other_session:
        q = q.where(h.session_id != bindparam("session"))
    if before:
        q = q.where(h.created_at <= bindparam("before"))
    if upto:
        q = q.where(h.id <= bindparam("max_id"))
    return q.order_by(h.id.desc()).limit(1)


@functools.cache
def _memories_query(at: bool) -> Select[Any]:
    m = t.memories.c
    q = select(t.memories).where(m.tenant == bindparam("tenant"), m.agent == bindparam("agent"))
    if at:
        q = q.where(m.captured_at <= bindparam("at")).where(
            or_(m.invalidated_at.is_(None), m.invalidated_at > bindparam("at"))
        )
    else:
        q = q.where(m.invalidated_at.is_(None))
    return q.order_by(m.id)


@functools.cache
def _summaries_query(upto: bool) -> Select[Any]:
    s = t.summaries.c
    q = select(t.summaries).where(s.tenant == bindparam("tenant"), s.agent == bindparam("agent"))
    q = q.where(s.superseded_by.is_(None))
    if upto:
        q = q.where(s.span_end <= bindparam("max_id"))
    return q.order_by(s.span_start)


def _strip(m: Any) -> dict[str, Any]:
    return {k: m[k] for k in m.keys() if k != "tenant"}


def _handoff(m: Any) -> HandoffRecord:
    d = _strip(m)
    d["body"] = HandoffBody.model_validate(d["body"])
    d.pop("text", None)
    return HandoffRecord.model_validate(d)


def _decision(m: Any) -> DecisionRecord:
    return DecisionRecord.model_validate(_strip(m))


def _memory(m: Any) -> MemoryRecord:
    return MemoryRecord.model_validate(_strip(m))


def _summary(m: Any) -> SummaryRecord:
    return SummaryRecord.model_validate(_strip(m))
