"""Handoff notes, the load-bearing registry, memories and summaries.

:class:`KnowledgeRepo` reads and writes one tenant's knowledge on the connection it is given
(a unit of work's: :mod:`wakeful.substrate.unit_of_work`), with idempotent ``step_key``
writes. Nothing here is ever overwritten: a newer memory supersedes an older one by pointer
and validity interval; a newer decision supersedes by ``superseded_by`` (writing decisions
by key, retiring and expiring them: :mod:`wakeful.substrate.registry_repo`).

Memories are bi-temporal. Valid time: ``captured_at`` to ``invalidated_at`` (when the fact
held). Transaction time: the agent's knowledge revisions (:mod:`wakeful.substrate.revisions`)
— the revision that wrote a row, and the one that cut its validity short or marked it. Every
read takes an optional ``revision``: the knowledge as it stood then, so a snapshot read at a
revision can be read again byte-for-byte after consolidation has moved on.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, bindparam, or_, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.substrate import schema as t
from wakeful.substrate.consolidation_repo import insert_summary, memory_from_row
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    SummaryRecord,
)
from wakeful.substrate.registry_repo import decision_row
from wakeful.substrate.revisions import (
    BUMP,
    Horizon,
    bump_revision,
    current_revision,
    horizon,
)
from wakeful.substrate.tenant_repo import TenantRepo


class KnowledgeRepo(TenantRepo):
    """One tenant's handoff notes, decisions, memories and summaries, on one connection."""

    def knowledge_revision(self, agent: str) -> int:
        """The agent's last committed knowledge revision (:mod:`wakeful.substrate.revisions`)."""
        return current_revision(self.conn, self.tenant, agent)

    def snapshot_horizon(self, agent: str) -> Horizon:
        """The agent's knowledge revision, its newest event's id and the revision at which
        an event of it was last retired, in one statement: a compile's snapshot reads
        knowledge at that revision, events up to that id, and its tail cache checks the
        last (``substrate.tail_cache``)."""
        return horizon(self.conn, self.tenant, agent)

    # --- handoff notes ------------------------------------------------------------------

    def write_handoff(self, rec: HandoffRecord) -> HandoffRecord:
        values: dict[str, Any] = {
            "tenant": self.tenant,
            "agent": rec.agent,
            "session_id": rec.session_id,
            "wake_id": rec.wake_id,
            "step_key": rec.step_key,
            "body": rec.body.model_dump(),
            "text": rec.body.render(),
            "user_id": rec.user_id,
        }
        # The revision bumped and the note written at it, in one statement (a retry bumps
        # it too, and its note is not written: the first note stands).
        row = self.conn.execute(_WRITE_HANDOFF, values).first()
        if row is None:
            row = self.conn.execute(
                select(t.handoff_notes).where(
                    t.handoff_notes.c.tenant == self.tenant,
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
        revision: int | None = None,
        scoped: bool = False,
        user: str | None = None,
    ) -> HandoffRecord | None:
        """The newest note (of another session than ``other_than_session``); with
        ``revision``, the newest written at or before it (and ``before`` is not needed);
        with ``scoped``, the newest a wake for ``user`` may read (``wakeful.users``:
        agent-wide notes, and that user's)."""
        q = _latest_handoff_query(
            other_than_session is not None,
            before is not None and revision is None,
            max_id is not None,
            revision is not None,
            scoped,
        )
        params = {
            "tenant": self.tenant,
            "agent": agent,
            "session": other_than_session,
            "before": before,
            "max_id": max_id,
            "rev": revision,
            "user": user,
        }
        row = self.conn.execute(q, params).first()
        return None if row is None else _handoff(row._mapping)

    def handoffs(self, agent: str) -> list[HandoffRecord]:
        rows = self.conn.execute(
            select(t.handoff_notes)
            .where(t.handoff_notes.c.tenant == self.tenant, t.handoff_notes.c.agent == agent)
            .order_by(t.handoff_notes.c.id)
        )
        return [_handoff(r._mapping) for r in rows]

    # --- load-bearing registry ----------------------------------------------------------

    def register_decision(self, rec: DecisionRecord) -> DecisionRecord:
        """Add a decision; an existing id is kept as first written (ids are never reused).
        Returns the stored decision: ``rec`` as written, or the one that held the id."""
        rev = bump_revision(self.conn, self.tenant, rec.agent)
        inserted = self.conn.execute(
            insert(t.decisions)
            .values(tenant=self.tenant, recorded_rev=rev, **rec.model_dump(exclude={"created_at"}))
            .on_conflict_do_nothing(index_elements=["tenant", "agent", "decision_id"])
            .returning(*t.decisions.c)
        ).first()
        row = inserted or decision_row(self.conn, self.tenant, rec.agent, rec.decision_id)
        return _decision(row._mapping)

    def supersede_decision(self, agent: str, decision_id: str, by: str) -> None:
        """Point a live decision at its successor (a superseded one keeps its first)."""
        d = t.decisions.c
        rev = bump_revision(self.conn, self.tenant, agent)
        self.conn.execute(
            update(t.decisions)
            .where(d.tenant == self.tenant, d.agent == agent, d.decision_id == decision_id)
            .where(d.superseded_by.is_(None))
            .values(superseded_by=by, superseded_rev=rev)
        )

    def live_decisions(
        self, agent: str, at: datetime, *, revision: int | None = None, proposals: bool = False
    ) -> list[DecisionRecord]:
        """Decisions live at ``at``: not expired, superseded or retired (as of ``revision``);
        with ``proposals``, the pending proposals too (``proposal_for`` set), which are
        never live decisions themselves."""
        params = {"tenant": self.tenant, "agent": agent, "at": at, "rev": revision}
        q = _LIVE_DECISIONS if revision is None else _DECISIONS_AT_REVISION
        rows = [_decision(r._mapping) for r in self.conn.execute(q, params)]
        return rows if proposals else [d for d in rows if d.proposal_for is None]

    # --- memories -----------------------------------------------------------------------

    def remember(self, rec: MemoryRecord) -> MemoryRecord:
        """Store a memory; a live memory on the same key is superseded, never overwritten.

        Supersession follows valid time, not arrival order: the new memory ends the
        validity of live ones captured at or before it; if a live one was captured after
        it (the new one arrived late), the new one is stored already superseded by it.
        """
        c = t.memories.c
        done = self.conn.execute(
            select(t.memories).where(c.tenant == self.tenant, c.step_key == rec.step_key)
        ).first()
        if done is not None:  # a retry: superseding again would retire the newer memories
            return memory_from_row(done._mapping)
        rev = bump_revision(self.conn, self.tenant, rec.agent)
        prior = self.conn.execute(
            select(c.id, c.captured_at).where(
                c.tenant == self.tenant,
                c.agent == rec.agent,
                c.key == rec.key,
                # A key is one memory per scope: a user's memory supersedes only hers.
                c.user_id.is_not_distinct_from(rec.user_id),
                c.invalidated_at.is_(None),
                c.step_key != rec.step_key,
            )
        ).all()
        older = [p.id for p in prior if p.captured_at <= rec.captured_at]
        newer = [p.captured_at for p in prior if p.captured_at > rec.captured_at]
        values = rec.model_dump(exclude={"id"})
        values["supersedes"] = max(older) if older else rec.supersedes
        values["recorded_rev"] = rev
        if newer:
            values["invalidated_at"], values["invalidated_rev"] = min(newer), rev
        self.conn.execute(
            insert(t.memories)
            .values(tenant=self.tenant, **values)
            .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
        )
        if older:
            self.conn.execute(
                update(t.memories)
                .where(c.tenant == self.tenant, c.id.in_(older))
                .values(invalidated_at=rec.captured_at, invalidated_rev=rev)
            )
        row = self.conn.execute(
            select(t.memories).where(c.tenant == self.tenant, c.step_key == rec.step_key)
        ).one()
        return memory_from_row(row._mapping)

    def memories(
        self, agent: str, *, at: datetime | None = None, revision: int | None = None
    ) -> list[MemoryRecord]:
        """Memories valid at ``at`` (all live ones when None), oldest first; with
        ``revision``, as the agent knew them at that revision (validity cut short and
        verification marked later are not yet seen)."""
        if revision is not None and at is None:
            raise ValueError("memories(revision=...) needs at=: a valid time to read at")
        params = {"tenant": self.tenant, "agent": agent, "at": at, "rev": revision}
        rows = self.conn.execute(_memories_query(at is not None, revision is not None), params)
        return [memory_from_row(r._mapping, revision) for r in rows]

    # --- summaries ----------------------------------------------------------------------

    def add_summary(self, rec: SummaryRecord, *, retire_span: bool, at: datetime) -> SummaryRecord:
        """Add a summary; when its gate passed, retire the raw span in the same transaction."""
        rev = bump_revision(self.conn, self.tenant, rec.agent)
        row = insert_summary(self.conn, self.tenant, rec, rev)
        if retire_span:
            e = t.events.c
            self.conn.execute(
                update(t.events)
                .where(
                    and_(
                        e.tenant == self.tenant,
                        e.agent == rec.agent,
                        e.id >= rec.span_start,
                        e.id <= rec.span_end,
                        e.retired_at.is_(None),
                        # A user's events between its agent-wide ones are not in the
                        # summary (consolidation reads agent-wide events): they stay.
                        e.user_id.is_(None),
                    )
                )
                .values(retired_at=at, retired_by=f"summary:{row.id}", retired_rev=rev)
            )
        return _summary(row._mapping)

    def summaries(
        self, agent: str, *, max_id: int | None = None, revision: int | None = None
    ) -> list[SummaryRecord]:
        """Live summaries (as of ``revision``), by span; up to ``max_id`` when given."""
        params = {"tenant": self.tenant, "agent": agent, "max_id": max_id, "rev": revision}
        rows = self.conn.execute(_summaries_query(max_id is not None, revision is not None), params)
        return [_summary(r._mapping) for r in rows]


# The reads every compile makes are built once per shape, with bound parameters: a
# statement rebuilt per call cost about as much CPU as its round trip (see wakes_repo.py).
# With a revision, "written by then" is ``recorded_rev <= rev`` and "retired by then" is
# ``*_rev <= rev``: the revision replaces comparisons of the database's clock (created_at)
# with the workflow's (``at``), which a replay could not reproduce.
# A handoff note, written at the revision the same statement bumps (a CTE).
_h = t.handoff_notes.c
_HANDOFF_VALUES = (
    "tenant",
    "agent",
    "session_id",
    "wake_id",
    "step_key",
    "body",
    "text",
    "user_id",
)
_BUMPED = BUMP.cte("bumped")
_WRITE_HANDOFF = (
    insert(t.handoff_notes)
    .from_select(
        [*_HANDOFF_VALUES, "recorded_rev"],
        select(*(bindparam(c, type_=_h[c].type) for c in _HANDOFF_VALUES), _BUMPED.c.revision),
    )
    .add_cte(_BUMPED)
    .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
    .returning(*t.handoff_notes.c)
)
_d = t.decisions.c
_DECISIONS = (
    select(t.decisions)
    .where(_d.tenant == bindparam("tenant"), _d.agent == bindparam("agent"))
    .where(or_(_d.expires_at.is_(None), _d.expires_at > bindparam("at")))
    # By code point, whatever the database's collation: the order decisions take in a
    # window must not depend on how the database was created (a restore elsewhere).
    .order_by(_d.decision_id.collate("C"))
)
_LIVE_DECISIONS = (
    _DECISIONS.where(_d.superseded_by.is_(None))
    .where(_d.created_at <= bindparam("at"))
    .where(or_(_d.retired_at.is_(None), _d.retired_at > bindparam("at")))
)
_DECISIONS_AT_REVISION = (
    _DECISIONS.where(_d.recorded_rev <= bindparam("rev"))
    .where(or_(_d.superseded_rev.is_(None), _d.superseded_rev > bindparam("rev")))
    .where(or_(_d.retired_rev.is_(None), _d.retired_rev > bindparam("rev")))
)


@functools.cache
def _latest_handoff_query(
    other_session: bool, before: bool, upto: bool, at_revision: bool = False, scoped: bool = False
) -> Select[Any]:
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
    if at_revision:
        q = q.where(h.recorded_rev <= bindparam("rev"))
    if scoped:  # NULL never equals: a scope without a user reads agent-wide notes only
        q = q.where(or_(h.user_id.is_(None), h.user_id == bindparam("user")))
    return q.order_by(h.id.desc()).limit(1)


@functools.cache
def _memories_query(at: bool, at_revision: bool = False) -> Select[Any]:
    m = t.memories.c
    q = select(t.memories).where(m.tenant == bindparam("tenant"), m.agent == bindparam("agent"))
    if at_revision:
        # Valid at ``at`` as known at ``rev``: an end of validity recorded later is unknown.
        q = q.where(m.recorded_rev <= bindparam("rev"), m.captured_at <= bindparam("at")).where(
            or_(
                m.invalidated_at.is_(None),
                m.invalidated_at > bindparam("at"),
                m.invalidated_rev > bindparam("rev"),
            )
        )
    elif at:
        q = q.where(m.captured_at <= bindparam("at")).where(
            or_(m.invalidated_at.is_(None), m.invalidated_at > bindparam("at"))
        )
    else:
        q = q.where(m.invalidated_at.is_(None))
    return q.order_by(m.id)


@functools.cache
def _summaries_query(upto: bool, at_revision: bool = False) -> Select[Any]:
    s = t.summaries.c
    q = select(t.summaries).where(s.tenant == bindparam("tenant"), s.agent == bindparam("agent"))
    if at_revision:
        q = q.where(s.recorded_rev <= bindparam("rev")).where(
            or_(s.superseded_rev.is_(None), s.superseded_rev > bindparam("rev"))
        )
    else:
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


def _summary(m: Any) -> SummaryRecord:
    return SummaryRecord.model_validate(_strip(m))
