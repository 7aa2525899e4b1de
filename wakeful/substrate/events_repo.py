"""Events: the agent's append-only log of turns, tool calls and tool results.

:class:`EventsRepo` reads and writes one tenant's events on the connection it is given (a
unit of work's: :mod:`wakeful.substrate.unit_of_work`); every statement binds its tenant.
Appends are idempotent on ``step_key``: a retry returns the events as first stored. The one
change an event row ever sees is its retirement by consolidation
(:mod:`wakeful.substrate.consolidation_repo`).

A long user turn (a webhook's text, say) is also stored whole as a blob, named in its meta
(``WHOLE_TEXT_META``): a window too small for it shows its head and tail, and the model
reads on from that handle with ``read_result`` (``compiler.oversize``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Select, TextClause, and_, bindparam, func, or_, select, text

from wakeful.compiler.blocks import content_hash
from wakeful.compiler.oversize import WHOLE_TEXT_META
from wakeful.substrate import schema as t
from wakeful.substrate.blobs import BlobsRepo, blob_arrays
from wakeful.substrate.pg_safe import pg_json
from wakeful.substrate.records import EventIn, StoredEvent
from wakeful.substrate.tail import tail_start
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["WHOLE_TEXT_CHARS", "EventsRepo", "event_from_row", "stored_row"]

# A user turn longer than this is stored whole as a blob besides its row: a window's share
# for one turn (``compiler.oversize``) is rarely smaller, and shorter turns are not copied.
WHOLE_TEXT_CHARS = 4_000


class EventsRepo(TenantRepo):
    """One tenant's event log, on one connection."""

    def append_events(
        self,
        agent: str,
        items: Sequence[EventIn],
        blobs: Sequence[Mapping[str, str]] = (),
    ) -> list[StoredEvent]:
        """Append in order; events whose step_key exists already are returned as stored.

        One statement per call whatever its size: the batch travels as one array per column
        and is unnested server-side (``INSERT ... SELECT FROM unnest ... ON CONFLICT DO
        NOTHING RETURNING``), so a bulk append costs one round trip and one plan rather than
        a statement per event. ``blobs`` (rows of ``BlobsRepo.blob_rows``: a tool's whole
        result, which its event names) are stored in the same statement, and so are the
        whole texts of long user turns.
        """
        if not items:
            return []
        items, whole = self._with_whole_texts(items)
        blobs = [*blobs, *whole]
        columns: dict[str, list[Any]] = {name: [] for name in _APPEND_COLUMNS}
        for e in items:
            row = stored_row(e)
            tool_input = row["tool_input"]
            row["tool_input"] = None if tool_input is None else json.dumps(tool_input)
            row["meta"] = json.dumps(row["meta"])
            for name, values in columns.items():
                values.append(row[name])
        keys = columns["step_key"]
        params = {"tenant": self.tenant, "agent": agent, **columns}
        if blobs:
            params |= blob_arrays(self.tenant, blobs)
        inserted = self.conn.execute(_APPEND_WITH_BLOBS if blobs else _APPEND, params).all()
        by_key = {r.step_key: event_from_row(r._mapping) for r in inserted}
        missing = [k for k in keys if k not in by_key]
        if missing:  # a retry: these were appended before
            found = self.conn.execute(
                select(t.events).where(
                    t.events.c.tenant == self.tenant, t.events.c.step_key.in_(missing)
                )
            )
            by_key.update({r.step_key: event_from_row(r._mapping) for r in found})
        return [by_key[k] for k in keys]

    def _with_whole_texts(
        self, items: Sequence[EventIn]
    ) -> tuple[Sequence[EventIn], list[dict[str, str]]]:
        """``items`` with each long user turn's text named in its meta as a blob, and the
        rows of those blobs, for the append to store (content-addressed: a retried append
        writes nothing new)."""
        long = [
            n
            for n, e in enumerate(items)
            if e.kind == "turn"
            and e.role == "user"
            and len(e.text) > WHOLE_TEXT_CHARS
            and WHOLE_TEXT_META not in e.meta
        ]
        if not long:
            return items, []
        blobs = BlobsRepo(self.conn, self.tenant)
        digests, rows = blobs.blob_rows([("event_text", items[n].text) for n in long])
        out = list(items)
        for n, digest in zip(long, digests, strict=True):
            meta = {**items[n].meta, WHOLE_TEXT_META: digest}
            out[n] = items[n].model_copy(update={"meta": meta})
        return out, rows

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
        """Events in append order. ``newest`` with ``limit`` gives the last ``limit``."""
        q = _events_query(wake_id is not None, max_id is not None, include_retired, newest)
        params = {"tenant": self.tenant, "agent": agent, "wake_id": wake_id, "max_id": max_id}
        rows = self.conn.execute(q if limit is None else q.limit(limit), params)
        out = [event_from_row(r._mapping) for r in rows]
        return out[::-1] if newest else out

    def event_by_step(self, step_key: str) -> StoredEvent | None:
        """The event a step wrote, if it did (one index lookup: a retry's first check)."""
        row = self.conn.execute(_EVENT_BY_STEP, {"tenant": self.tenant, "key": step_key}).first()
        return None if row is None else event_from_row(row._mapping)

    def recent_events(
        self,
        agent: str,
        *,
        max_id: int,
        limit: int,
        session_id: str | None = None,
        page: int = 1,
    ) -> list[StoredEvent]:
        """The raw tail a snapshot starts from, in append order.

        With ``page == 1`` (or no session): of the agent's newest ``limit`` events up to
        ``max_id``, those of ``session_id`` (all of them when None).

        With a session and ``page > 1``: the session's events from a page boundary on. The
        tail starts at the session's event whose ordinal (its 0-based place among the
        session's events up to ``max_id``, retired ones included, so it never changes) is
        the largest multiple of ``page`` at or below that of the ``limit``-th newest
        (:func:`~wakeful.substrate.tail.tail_start`): ``limit`` to ``limit + page - 1``
        events, and a first event that moves once every ``page`` events instead of with
        every event — the start of the history a window shows, and so the provider's
        cached prefix, stays put in between. Ordinals are counted within the session
        (sessions end at handoffs, so the count stays small), never across the agent's
        whole history.
        """
        tail_start(0, limit, page)  # validates limit and page
        e = t.events.c
        mine = [e.tenant == self.tenant, e.agent == agent, e.id <= max_id]
        if session_id is None or page == 1:
            newest = select(t.events).where(*mine).order_by(e.id.desc()).limit(limit)
            tail = newest.subquery()
            q = select(tail)
            if session_id is not None:
                q = q.where(tail.c.session_id == session_id)
            return [event_from_row(r._mapping) for r in self.conn.execute(q.order_by(tail.c.id))]
        mine.append(e.session_id == session_id)
        ids = (
            self.conn.execute(
                select(e.id).where(*mine).order_by(e.id.desc()).limit(limit + page - 1)
            )
            .scalars()
            .all()
        )
        first_id = ids[-1] if ids else 0
        if len(ids) > limit:
            total = self.conn.execute(select(func.count()).where(*mine)).scalar_one()
            first_id = ids[total - 1 - tail_start(total, limit, page)]
        q = select(t.events).where(*mine, e.id >= first_id).order_by(e.id)
        return [event_from_row(r._mapping) for r in self.conn.execute(q)]

    def max_event_id(self, agent: str) -> int:
        value = self.conn.execute(
            _MAX_EVENT_ID, {"tenant": self.tenant, "agent": agent}
        ).scalar_one()
        return int(value)

    def count_events(self, agent: str) -> int:
        value = self.conn.execute(
            select(func.count()).where(t.events.c.tenant == self.tenant, t.events.c.agent == agent)
        ).scalar_one()
        return int(value)

    def session_count(self, agent: str, session_id: str, *, max_id: int) -> int:
        """How many events of the session have ids up to ``max_id`` (retired ones too)."""
        params = {"tenant": self.tenant, "agent": agent, "session_id": session_id}
        return int(self.conn.execute(_SESSION_COUNT, params | {"max_id": max_id}).scalar_one())

    def session_events_after_counted(
        self, agent: str, session_id: str, *, after_id: int, max_id: int
    ) -> tuple[list[StoredEvent], int]:
        """The session's events with ``after_id < id <= max_id`` in id order, and how many
        of its events have ids up to ``max_id`` (:meth:`session_count`), in one statement:
        one round trip, and one point in time for both."""
        params = {"tenant": self.tenant, "agent": agent, "session_id": session_id}
        rows = self.conn.execute(
            _SESSION_AFTER_COUNTED, params | {"after": after_id, "max_id": max_id}
        ).all()
        events = [event_from_row(r._mapping) for r in rows if r._mapping["id"] is not None]
        return events, int(rows[0]._mapping[_TOTAL])  # one row at least: the count's

    def last_retired_revision(self, agent: str) -> int | None:
        """The knowledge revision at which an event of the agent was last retired, if any
        was (one lookup in a partial index)."""
        params = {"tenant": self.tenant, "agent": agent}
        value = self.conn.execute(_LAST_RETIRED, params).scalar_one()
        return None if value is None else int(value)

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
        without one, the wake) with ids up to ``max_id``, in id order; retired ones too.
        Only results a wake of ``user`` may see (``users.visible_to``; None: the agent's
        own wake, which sees agent-wide results alone)."""
        e = t.events.c
        scope = e.session_id == session_id if session_id is not None else e.wake_id == wake_id
        visible = (
            e.user_id.is_(None) if user is None else or_(e.user_id.is_(None), e.user_id == user)
        )
        q = (
            select(e.id, e.meta)
            .where(
                e.tenant == self.tenant,
                e.agent == agent,
                e.id <= max_id,
                e.kind == "tool_result",
                e.tool_name == tool_name,
                e.is_error.is_(False),
                scope,
                visible,
            )
            .order_by(e.id)
        )
        return [(event_id, meta or {}) for event_id, meta in self.conn.execute(q)]

    def holds_result(self, agent: str, handle: str, meta_keys: Sequence[str]) -> bool:
        """Whether one of the agent's own tool results or user turns (a turn too long for
        its window is shown in part, with a handle) names the stored blob ``handle`` under
        one of ``meta_keys`` (``read_result`` reads no other blob: a handle never reaches
        another agent's windows, prompts or results)."""
        e = t.events.c
        named = or_(*(e.meta[key].astext == handle for key in meta_keys))
        q = (
            select(e.id)
            .where(e.tenant == self.tenant, e.agent == agent, e.kind.in_(("tool_result", "turn")))
            .where(named)
            .limit(1)
        )
        return self.conn.execute(q).first() is not None

    def events_with_positions(
        self, agent: str, *, after_id: int, upto_id: int, limit: int
    ) -> list[tuple[StoredEvent, int]]:
        """Up to ``limit`` events with ``after_id < id <= upto_id``, in id order, each with
        its 0-based position among all of its session's events (0 for sessionless events).

        Positions are what vector chunks use as neighbours' coordinates (seq ± 1).
        """
        e = t.events.c
        rows = self.conn.execute(
            select(t.events)
            .where(e.tenant == self.tenant, e.agent == agent)
            .where(e.id > after_id, e.id <= upto_id)
            .order_by(e.id)
            .limit(limit)
        ).all()
        sessions = sorted({r.session_id for r in rows if r.session_id is not None})
        before: dict[str, int] = {}
        if sessions:
            counted = self.conn.execute(
                select(e.session_id, func.count())
                .where(e.tenant == self.tenant, e.agent == agent)
                .where(e.session_id.in_(sessions), e.id <= after_id)
                .group_by(e.session_id)
            )
            before = {s: int(n) for s, n in counted}
        out: list[tuple[StoredEvent, int]] = []
        for r in rows:
            event = event_from_row(r._mapping)
            position = 0
            if event.session_id is not None:
                position = before.get(event.session_id, 0)
                before[event.session_id] = position + 1
            out.append((event, position))
        return out


# Hot reads are built once, with bound parameters (see wakes_repo.py).
_MAX_EVENT_ID = select(func.coalesce(func.max(t.events.c.id), 0)).where(
    t.events.c.tenant == bindparam("tenant"), t.events.c.agent == bindparam("agent")
)
_EVENT_BY_STEP = select(t.events).where(
    t.events.c.tenant == bindparam("tenant"), t.events.c.step_key == bindparam("key")
)


# What the tail cache (:mod:`wakeful.substrate.tail_cache`) checks on every read.
_e = t.events.c
_SESSION = (
    _e.tenant == bindparam("tenant"),
    _e.agent == bindparam("agent"),
    _e.session_id == bindparam("session_id"),
)
_SESSION_COUNT = select(func.count()).where(*_SESSION, _e.id <= bindparam("max_id"))
# The count joined to the events after: a row for each (with the count), or one row with
# the count alone when there is none.
_TOTAL = "session_total"
_COUNTED = (
    select(func.count().label(_TOTAL)).where(*_SESSION, _e.id <= bindparam("max_id")).subquery()
)
_SESSION_AFTER_COUNTED = (
    select(_COUNTED.c[_TOTAL], t.events)
    .select_from(
        _COUNTED.outerjoin(
            t.events, and_(*_SESSION, _e.id > bindparam("after"), _e.id <= bindparam("max_id"))
        )
    )
    .order_by(_e.id)
)
_LAST_RETIRED = select(func.max(_e.retired_rev)).where(
    _e.tenant == bindparam("tenant"),
    _e.agent == bindparam("agent"),
    _e.retired_rev.is_not(None),
)


@functools.cache
def _events_query(by_wake: bool, upto: bool, include_retired: bool, newest: bool) -> Select[Any]:
    e = t.events.c
    q = select(t.events).where(e.tenant == bindparam("tenant"), e.agent == bindparam("agent"))
    if by_wake:
        q = q.where(e.wake_id == bindparam("wake_id"))
    if upto:
        q = q.where(e.id <= bindparam("max_id"))
    if not include_retired:
        q = q.where(e.retired_at.is_(None))
    return q.order_by(e.id.desc() if newest else e.id)


# Columns an append sets, with their Postgres array types; the rest take their defaults.
_APPEND_TYPES = {
    "session_id": "text",
    "wake_id": "text",
    "step_key": "text",
    "kind": "text",
    "role": "text",
    "text": "text",
    "tool_call_id": "text",
    "tool_name": "text",
    "tool_input": "jsonb",
    "is_error": "boolean",
    "resolved": "boolean",
    "content_hash": "text",
    "event_time": "timestamptz",
    "external_id": "text",
    "meta": "jsonb",
    "user_id": "text",
}
_APPEND_COLUMNS = tuple(_APPEND_TYPES)


def _append_sql() -> TextClause:
    """``INSERT ... SELECT ... FROM unnest(:col1, :col2, ...)``: one statement per batch.

    JSON travels as text and is parsed by the server; ``ORDER BY`` the ordinality keeps the
    append order in the ids.
    """
    cols = ", ".join(_APPEND_COLUMNS)
    arrays = ", ".join(
        f"CAST(:{c} AS {'text' if kind == 'jsonb' else kind}[])"
        for c, kind in _APPEND_TYPES.items()
    )
    values = ", ".join(
        f"CAST(u.{c} AS jsonb)" if kind == "jsonb" else f"u.{c}"
        for c, kind in _APPEND_TYPES.items()
    )
    return text(
        f"INSERT INTO events (tenant, agent, {cols}) SELECT :tenant, :agent, {values}"
        f" FROM unnest({arrays}) WITH ORDINALITY AS u({cols}, n) ORDER BY u.n"
        " ON CONFLICT (tenant, step_key) DO NOTHING RETURNING events.*"
    )


_APPEND = _append_sql()
# The same, with blobs stored by a CTE: their rows as arrays, unnested in step.
_APPEND_WITH_BLOBS = text(
    "WITH stored AS (INSERT INTO blobs (tenant, hash, kind, content)"
    " SELECT :b_tenant, * FROM unnest(CAST(:b_hashes AS text[]), CAST(:b_kinds AS text[]),"
    " CAST(:b_contents AS text[])) ON CONFLICT (tenant, hash) DO NOTHING) " + _APPEND.text
)


_EVENT_FIELDS = frozenset(StoredEvent.model_fields)


def stored_row(e: EventIn) -> dict[str, Any]:
    """An event's row as it will be stored (text Postgres refuses replaced, ``pg_safe``),
    with its content hash, made from what is stored."""
    row: dict[str, Any] = pg_json(e.model_dump())
    row["content_hash"] = event_content_hash(
        row["text"], row["kind"], row["role"], row["tool_call_id"]
    )
    return row


def event_content_hash(text: str, kind: str, role: str | None, tool_call_id: str | None) -> str:
    """An event row's ``content_hash``: what it says, as what, by whom, for which call."""
    return content_hash(text, kind, role or "", tool_call_id or "")


def event_from_row(m: Any) -> StoredEvent:
    # Rows come from typed columns, so they are built without re-validation: a snapshot
    # reads hundreds of events per compile and validation was most of its cost.
    return StoredEvent.model_construct(**{k: v for k, v in m.items() if k in _EVENT_FIELDS})
