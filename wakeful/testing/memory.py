"""An in-memory substrate of one tenant: what a compile reads, and the writes that fill it.

:class:`MemoryStore` has the signatures and the semantics of
:class:`~wakeful.substrate.store.TenantStore` for the reads a compile's snapshot makes
(:func:`wakeful.activities.snapshot_input.gather_snapshot` and the built-in context sources
of :mod:`wakeful.substrate.sources`: the event tail, live decisions, the handoff note,
summaries, memories, loaded skills), the knowledge revision a compile reads at, and the
writes a test fills it with through the runtime's own record types:

* ``append_events`` (:class:`~wakeful.substrate.records.EventIn` in,
  :class:`~wakeful.substrate.records.StoredEvent` out; a step key already stored returns
  the event as stored, and, as the Postgres sequence does, still uses up an id);
* ``write_handoff``, ``register_decision``, ``supersede_decision``, ``remember`` (a memory
  supersedes a live one on its key by valid time) and ``add_summary`` (which may retire the
  span of events it stands for).

Every knowledge write moves the agent's knowledge revision, so a snapshot read at a
revision (as the compile activity reads) sees what was written by then. Rows are Python
lists and dicts: nothing of Postgres is emulated but what its rows mean. ``created_at`` and
``ingest_time``, which Postgres takes from its own clock, come from ``clock``; decisions
sort by id in code-point order, as the Postgres store does whatever the database's collation.

It does not hold wakes, compiles, model calls or their ledgers, blobs, agents, index
cursors, webhook claims, the consolidation log, memory verification marks, summary rollups,
or the decision registry by key (``record_decision``, ``retire_decision``,
``expire_decisions``): tests of those use a real :class:`TenantStore`. It is not safe for
concurrent writers. :func:`wakeful.testing.compile_for` compiles a window from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar, cast

from wakeful.names import check_tenant
from wakeful.substrate.events_repo import stored_row
from wakeful.substrate.records import (
    DecisionRecord,
    EventIn,
    HandoffRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.tail import tail_start
from wakeful.users import visible_to

__all__ = ["MemoryStore", "MemoryUnit", "recent_tail", "select_events"]

_R = TypeVar("_R")
_Once = TypeVar("_Once", HandoffRecord, SummaryRecord)  # written once per step key


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Row(Generic[_R]):
    """A knowledge row and its transaction time: the revision that wrote it and those that
    ended it (superseded or invalidated it; retired it)."""

    record: _R
    recorded: int
    ended: int | None = None
    retired: int | None = None

    def written_by(self, revision: int) -> bool:
        return self.recorded <= revision

    def ended_after(self, revision: int) -> bool:
        return self.ended is None or self.ended > revision


@dataclass
class _Agent:
    """One agent's rows, each list in id order (decisions by id)."""

    revision: int = 0
    events: list[StoredEvent] = field(default_factory=list)
    handoffs: list[_Row[HandoffRecord]] = field(default_factory=list)
    decisions: dict[str, _Row[DecisionRecord]] = field(default_factory=dict)
    memories: list[_Row[MemoryRecord]] = field(default_factory=list)
    summaries: list[_Row[SummaryRecord]] = field(default_factory=list)

    def bump(self) -> int:
        self.revision += 1
        return self.revision


@dataclass(frozen=True)
class MemoryUnit:
    """What :meth:`MemoryStore.unit` yields: the store under the names a
    :class:`~wakeful.substrate.unit_of_work.UnitOfWork` gives its repositories, so code
    written as ``with ts.unit() as uow: uow.events.max_event_id(...)`` runs on it."""

    store: MemoryStore

    @property
    def tenant(self) -> str:
        return self.store.name

    @property
    def events(self) -> MemoryStore:
        return self.store

    @property
    def knowledge(self) -> MemoryStore:
        return self.store


class MemoryStore:
    """One tenant's compile-relevant substrate in memory (see the module docstring).

    ``name`` is the tenant (a valid tenant name), ``clock`` the time rows are stamped with
    where Postgres would use its own clock (``created_at``, ``ingest_time``)."""

    def __init__(self, name: str = "memory", *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.name = check_tenant(name)
        self.clock = clock
        self._agents: dict[str, _Agent] = {}
        # Ids come from sequences shared by the tenant's agents, as Postgres's identities.
        self._last_event_id = 0
        self._last_ids = {"handoff": 0, "memory": 0, "summary": 0}
        # Step keys are unique per tenant, across its agents: each maps to its row.
        self._event_steps: dict[str, tuple[str, int]] = {}  # -> (agent, event id)
        self._steps: dict[tuple[str, str], _Row[Any]] = {}  # (table, step key) -> its row

    def _of(self, agent: str) -> _Agent:
        return self._agents.setdefault(agent, _Agent())

    def _next_id(self, table: str) -> int:
        self._last_ids[table] += 1
        return self._last_ids[table]

    def _once(self, table: str, rows: list[_Row[_Once]], rec: _Once, rev: int) -> _Once:
        """The row of ``rec``'s step key: written now (an id of ``table``'s, the clock's
        time), or as first written (a retry)."""
        row = self._steps.get((table, rec.step_key))
        if row is None:
            stamps = {"id": self._next_id(table), "created_at": self.clock()}
            row = self._steps[(table, rec.step_key)] = _Row(rec.model_copy(update=stamps), rev)
            rows.append(row)
        return cast(_Once, row.record.model_copy(deep=True))

    # --- units (TenantStore's shape: every call reads the same lists) -------------------

    @contextlib.contextmanager
    def unit(self) -> Iterator[MemoryUnit]:
        """A unit of work: the store itself (its reads are consistent without one)."""
        yield MemoryUnit(self)

    def within(self, uow: MemoryUnit) -> MemoryStore:
        if uow.tenant != self.name:
            raise ValueError(f"a unit of tenant {uow.tenant!r} used for tenant {self.name!r}")
        return self

    def standalone(self) -> MemoryStore:
        return self

    # --- events ---------------------------------------------------------------------------

    def append_events(self, agent: str, items: Sequence[EventIn]) -> list[StoredEvent]:
        """Append in order; events whose step_key exists already are returned as stored."""
        out: list[StoredEvent] = []
        for item in items:
            self._last_event_id += 1  # a conflicting row uses up its id too
            known = self._event_steps.get(item.step_key)
            if known is not None:  # a retry: the event as stored (retired since, maybe)
                owner, event_id = known
                out.append(next(e for e in self._of(owner).events if e.id == event_id))
            else:
                row = stored_row(item)  # as Postgres stores it (no NUL, ...)
                event = StoredEvent(**row, id=self._last_event_id, ingest_time=self.clock())
                self._of(agent).events.append(event)
                self._event_steps[item.step_key] = (agent, event.id)
                out.append(event)
        return out

    def events(
        self,
        agent: str,
        *,
        wake_id: str | None = None,
        max_id: int | None = None,
        include_retired: bool = True,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[StoredEvent]:
        """The agent's events in id order (the last ``limit`` with ``newest``)."""
        return select_events(
            self._of(agent).events,
            wake_id=wake_id,
            max_id=max_id,
            include_retired=include_retired,
            limit=limit,
            newest=newest,
        )

    def events_by_ids(self, agent: str, ids: Sequence[int]) -> list[StoredEvent]:
        """As ``TenantStore.events_by_ids``: the events with these ids (retired ones too),
        in id order."""
        wanted = set(ids)
        return [e for e in self.events(agent) if e.id in wanted]

    def recent_events(
        self,
        agent: str,
        *,
        max_id: int,
        limit: int,
        session_id: str | None = None,
        page: int = 1,
    ) -> list[StoredEvent]:
        """The raw tail a snapshot starts from (``TenantStore.recent_events``)."""
        events = self._of(agent).events
        return recent_tail(events, max_id=max_id, limit=limit, session_id=session_id, page=page)

    def max_event_id(self, agent: str) -> int:
        events = self._of(agent).events
        return events[-1].id if events else 0

    def events_with_positions(
        self, agent: str, *, after_id: int, upto_id: int, limit: int
    ) -> list[tuple[StoredEvent, int]]:
        """Up to ``limit`` events with ``after_id < id <= upto_id``, each with its 0-based
        position among its session's events (0 for sessionless events)."""
        position: dict[str, int] = {}
        out: list[tuple[StoredEvent, int]] = []
        for e in self._of(agent).events:
            if e.id > upto_id or len(out) == limit:
                break
            n = 0
            if e.session_id is not None:
                n = position[e.session_id] = position.get(e.session_id, -1) + 1
            if e.id > after_id:
                out.append((e, n))
        return out

    def tool_result_meta(
        self,
        agent: str,
        tool_name: str,
        *,
        max_id: int,
        session_id: str | None,
        wake_id: str | None,
        user: str | None = None,
    ) -> list[tuple[int, dict[str, Any]]]:
        """The id and meta of each successful result of ``tool_name`` in the session (or,
        without one, the wake) up to ``max_id``, visible to ``user``'s wakes; retired ones
        too."""
        if session_id is None and wake_id is None:
            return []  # SQL's ``wake_id = NULL`` holds for no row
        return [
            (e.id, dict(e.meta))
            for e in self._of(agent).events
            if e.id <= max_id
            and e.kind == "tool_result"
            and e.tool_name == tool_name
            and not e.is_error
            and (e.session_id == session_id if session_id is not None else e.wake_id == wake_id)
            and visible_to(e.user_id, user)
        ]

    # --- knowledge ------------------------------------------------------------------------

    def knowledge_revision(self, agent: str) -> int:
        """The agent's knowledge revision: how many knowledge writes it has seen."""
        return self._of(agent).revision

    def write_handoff(self, rec: HandoffRecord) -> HandoffRecord:
        """Store a handoff note; a retry (its step key stored already) gets the first."""
        rows = self._of(rec.agent)
        return self._once("handoff", rows.handoffs, rec, rows.bump())

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
        """As ``TenantStore.latest_handoff``: the newest note, of another session than
        ``other_than_session``, written by ``revision`` (else by the time ``before``),
        with ``scoped`` one a wake for ``user`` may read."""
        for row in reversed(self._of(agent).handoffs):
            h = row.record
            if (
                (other_than_session is None or h.session_id != other_than_session)
                and (not scoped or visible_to(h.user_id, user))
                and (before is None or revision is not None or _le(h.created_at, before))
                and (max_id is None or (h.id or 0) <= max_id)
                and (revision is None or row.written_by(revision))
            ):
                return h.model_copy(deep=True)
        return None

    def register_decision(self, rec: DecisionRecord) -> DecisionRecord:
        """Add a decision; an existing id is kept as first written (ids are never reused).
        Returns the stored decision: ``rec`` as written, or the one that held the id."""
        rows = self._of(rec.agent)
        rev = rows.bump()
        if rec.decision_id not in rows.decisions:
            stored = rec.model_copy(update={"created_at": self.clock()})
            rows.decisions[rec.decision_id] = _Row(stored, rev)
        return rows.decisions[rec.decision_id].record

    def supersede_decision(self, agent: str, decision_id: str, by: str) -> None:
        """Point a live decision at its successor (a superseded one keeps its first)."""
        rows = self._of(agent)
        rev = rows.bump()
        row = rows.decisions.get(decision_id)
        if row is not None and row.record.superseded_by is None:
            row.record = row.record.model_copy(update={"superseded_by": by})
            row.ended = rev

    def all_decisions(self, agent: str) -> list[DecisionRecord]:
        """Every registry entry, superseded and expired ones too, by id."""
        return [row.record.model_copy() for _, row in sorted(self._of(agent).decisions.items())]

    def live_decisions(
        self, agent: str, at: datetime, *, revision: int | None = None, proposals: bool = False
    ) -> list[DecisionRecord]:
        """Decisions live at ``at``: not expired, superseded or retired (as of ``revision``);
        with ``proposals``, the pending proposals too."""
        out = []
        for _, row in sorted(self._of(agent).decisions.items()):
            d = row.record
            if d.expires_at is not None and d.expires_at <= at:
                continue
            if d.proposal_for is not None and not proposals:
                continue
            if revision is None:
                live = (
                    d.superseded_by is None
                    and _le(d.created_at, at)
                    and (d.retired_at is None or d.retired_at > at)
                )
            else:
                live = (
                    row.written_by(revision)
                    and row.ended_after(revision)
                    and (row.retired is None or row.retired > revision)
                )
            if live:
                out.append(d.model_copy())
        return out

    def remember(self, rec: MemoryRecord) -> MemoryRecord:
        """Store a memory; a live memory on the same key is superseded, never overwritten.

        Supersession follows valid time, not arrival order: the new memory ends the
        validity of live ones captured at or before it; if a live one was captured after
        it (the new one arrived late), the new one is stored already superseded by it.
        """
        done = self._steps.get(("memory", rec.step_key))
        if done is not None:  # a retry: superseding again would retire the newer memories
            return cast(MemoryRecord, done.record.model_copy())
        rows = self._of(rec.agent)
        rev = rows.bump()
        prior = [
            r for r in rows.memories if r.record.key == rec.key and r.record.invalidated_at is None
        ]
        older = [r for r in prior if r.record.captured_at <= rec.captured_at]
        newer = [r.record.captured_at for r in prior if r.record.captured_at > rec.captured_at]
        update: dict[str, Any] = {
            "id": self._next_id("memory"),
            "supersedes": max(r.record.id or 0 for r in older) if older else rec.supersedes,
        }
        row = _Row(rec, rev)
        if newer:
            update["invalidated_at"] = min(newer)
            row.ended = rev
        row.record = rec.model_copy(update=update)
        for r in older:
            r.record = r.record.model_copy(update={"invalidated_at": rec.captured_at})
            r.ended = rev
        rows.memories.append(row)
        self._steps[("memory", rec.step_key)] = row
        return row.record.model_copy()

    def memories(
        self, agent: str, *, at: datetime | None = None, revision: int | None = None
    ) -> list[MemoryRecord]:
        """Memories valid at ``at`` (all live ones when None), oldest first; with
        ``revision``, as the agent knew them at that revision."""
        if revision is not None and at is None:
            raise ValueError("memories(revision=...) needs at=: a valid time to read at")
        out = []
        for row in self._of(agent).memories:
            m = row.record
            if at is None:
                valid = m.invalidated_at is None
            else:
                ends = m.invalidated_at is None or m.invalidated_at > at
                if revision is not None:
                    # Valid at ``at`` as known at ``revision``: a later end is not known yet.
                    ends = ends or (row.ended is not None and row.ended > revision)
                    ends = ends and row.written_by(revision)
                valid = m.captured_at <= at and ends
            if valid:
                out.append(m.model_copy())
        return out

    def add_summary(self, rec: SummaryRecord, *, retire_span: bool, at: datetime) -> SummaryRecord:
        """Add a summary (once per step key); with ``retire_span``, retire the raw events
        of its span that are not retired yet, at ``at``, by it."""
        rows = self._of(rec.agent)
        rev = rows.bump()
        summary = self._once("summary", rows.summaries, rec, rev)
        if retire_span:
            retired = {"retired_at": at, "retired_by": f"summary:{summary.id}", "retired_rev": rev}
            rows.events = [
                e.model_copy(update=retired)
                if rec.span_start <= e.id <= rec.span_end and e.retired_at is None
                else e
                for e in rows.events
            ]
        return summary

    def summaries(
        self, agent: str, *, max_id: int | None = None, revision: int | None = None
    ) -> list[SummaryRecord]:
        """Live summaries (as of ``revision``), by span; up to ``max_id`` when given."""
        live = [
            row.record
            for row in self._of(agent).summaries
            if (
                row.record.superseded_by is None
                if revision is None
                else row.written_by(revision) and row.ended_after(revision)
            )
            and (max_id is None or row.record.span_end <= max_id)
        ]
        return [s.model_copy() for s in sorted(live, key=lambda s: s.span_start)]


def select_events(
    events: Sequence[StoredEvent],
    *,
    wake_id: str | None = None,
    max_id: int | None = None,
    include_retired: bool = True,
    limit: int | None = None,
    newest: bool = False,
) -> list[StoredEvent]:
    """``TenantStore.events`` over ``events`` (one agent's, in id order): for a view that
    holds events of its own beside a store's."""
    out = [
        e
        for e in events
        if (wake_id is None or e.wake_id == wake_id)
        and (max_id is None or e.id <= max_id)
        and (include_retired or e.retired_at is None)
    ]
    if limit is not None:
        out = out[len(out) - min(limit, len(out)) :] if newest else out[:limit]
    return out


def recent_tail(
    events: Sequence[StoredEvent],
    *,
    max_id: int,
    limit: int,
    session_id: str | None = None,
    page: int = 1,
) -> list[StoredEvent]:
    """``TenantStore.recent_events`` over ``events`` (one agent's, in id order): of the
    newest ``limit`` up to ``max_id``, those of ``session_id``; with a session and
    ``page > 1``, the session's events from a page boundary on
    (:func:`~wakeful.substrate.tail.tail_start`)."""
    tail_start(0, limit, page)  # validates limit and page
    if session_id is None or page == 1:
        tail = select_events(events, max_id=max_id, limit=limit, newest=True)
        return [e for e in tail if session_id is None or e.session_id == session_id]
    mine = [e for e in select_events(events, max_id=max_id) if e.session_id == session_id]
    return mine[tail_start(len(mine), limit, page) :]


def _le(when: datetime | None, bound: datetime) -> bool:
    """``when <= bound`` as SQL has it: a missing time compares as nothing (false)."""
    return when is not None and when <= bound
