"""Repositories over the substrate tables.

``Store`` owns the engine; ``Store.tenant(name)`` returns a :class:`TenantStore`, and every
read or write goes through one, so no public method can touch another tenant's rows. Writes
that an activity makes are idempotent on ``step_key``: a retry returns the first write.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Select,
    TextClause,
    bindparam,
    create_engine,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import OperationalError

from wakeful.compiler.blocks import content_hash
from wakeful.errors import StoreError, UnknownAgentError
from wakeful.substrate import schema as t
from wakeful.substrate.blobs import BlobsMixin
from wakeful.substrate.knowledge import KnowledgeMixin
from wakeful.substrate.liveness import ping_when_idle
from wakeful.substrate.migrate import migrate
from wakeful.substrate.records import (
    CompileRecord,
    EventIn,
    ModelCallRecord,
    StoredEvent,
    WakeRecord,
)
from wakeful.substrate.revisions import current_revision
from wakeful.substrate.tail import tail_start


class Store:
    """The substrate's rows in Postgres."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def connect(cls, url: str, *, migrate_schema: bool = True) -> Store:
        # hide_parameters: event text must never ride along in an error into workflow history.
        engine = create_engine(url, pool_size=5, max_overflow=5, hide_parameters=True)
        ping_when_idle(engine)  # not a ping per transaction (see liveness)
        store = cls(engine)
        if migrate_schema:
            try:
                migrate(engine)
            except OperationalError as exc:
                raise StoreError(
                    f"cannot reach Postgres at {engine.url.render_as_string(hide_password=True)}:"
                    f" {exc.orig}. Start it (`wakeful stack up`) or fix WAKEFUL_DATABASE_URL."
                ) from exc
        return store

    def tenant(self, tenant: str) -> TenantStore:
        if not tenant:
            raise ValueError("tenant must be a non-empty string")
        return TenantStore(self.engine, tenant)

    def close(self) -> None:
        self.engine.dispose()


class TenantStore(KnowledgeMixin, BlobsMixin):
    """Every repository method, bound to one tenant."""

    def __init__(self, engine: Engine, tenant: str) -> None:
        self.engine = engine
        self.name = tenant
        self._open = threading.local()

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """A transaction. Nested calls on one thread join the outermost one, so a caller
        can run several repository reads in one transaction and one connection checkout
        (``load_blocks`` does), and several writes atomically."""
        conn: Connection | None = getattr(self._open, "conn", None)
        if conn is not None:
            yield conn
            return
        with self.engine.begin() as conn:
            self._open.conn = conn
            try:
                yield conn
            finally:
                self._open.conn = None

    # --- agents -----------------------------------------------------------------------

    def upsert_agent(
        self, name: str, *, model: str, provider: str, instructions: str, spec: dict[str, Any]
    ) -> None:
        spec_json = json.dumps(spec, sort_keys=True)
        row = {
            "tenant": self.name,
            "name": name,
            "model": model,
            "provider": provider,
            "instructions": instructions,
            "spec": spec,
            "spec_hash": content_hash(spec_json),
        }
        with self.tx() as conn:
            conn.execute(insert(t.tenants).values(tenant=self.name).on_conflict_do_nothing())
            stmt = insert(t.agents).values(**row)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["tenant", "name"],
                    set_={k: stmt.excluded[k] for k in row if k not in ("tenant", "name")},
                )
            )

    def get_agent(self, name: str) -> dict[str, Any]:
        with self.tx() as conn:
            row = conn.execute(
                select(t.agents).where(t.agents.c.tenant == self.name, t.agents.c.name == name)
            ).first()
        if row is None:
            raise UnknownAgentError(
                f"no agent {name!r} in tenant {self.name!r}; create it with `wakeful agent create`"
            )
        return dict(row._mapping)

    def list_agents(self) -> list[dict[str, Any]]:
        with self.tx() as conn:
            rows = conn.execute(
                select(t.agents).where(t.agents.c.tenant == self.name).order_by(t.agents.c.name)
            )
            return [dict(r._mapping) for r in rows]

    # --- wakes ------------------------------------------------------------------------

    def start_wake(self, wake: WakeRecord) -> WakeRecord:
        """Record a wake; a retry (same wake id) returns the first record."""
        with self.tx() as conn:
            # RETURNING answers the first write in one round trip; only a retry reads.
            row = conn.execute(_START_WAKE, {"tenant": self.name, **wake.model_dump()}).first()
            if row is None:
                row = conn.execute(
                    select(t.wakes).where(
                        t.wakes.c.tenant == self.name, t.wakes.c.wake_id == wake.wake_id
                    )
                ).one()
        return _wake(row._mapping)

    def finish_wake(self, wake_id: str, status: str, at: datetime) -> None:
        with self.tx() as conn:
            conn.execute(
                _FINISH_WAKE,
                {"of_tenant": self.name, "wake": wake_id, "new_status": status, "at": at},
            )

    def wakes(self, agent: str) -> list[WakeRecord]:
        with self.tx() as conn:
            rows = conn.execute(
                select(t.wakes)
                .where(t.wakes.c.tenant == self.name, t.wakes.c.agent == agent)
                .order_by(t.wakes.c.number)
            )
            return [_wake(r._mapping) for r in rows]

    def wake_by_key(self, agent: str, idempotency_key: str) -> WakeRecord | None:
        """The first wake a trigger with this idempotency key started, if any."""
        params = {"tenant": self.name, "agent": agent, "key": idempotency_key}
        with self.tx() as conn:
            row = conn.execute(_WAKE_BY_KEY, params).first()
        return None if row is None else _wake(row._mapping)

    def wake_by_number(self, agent: str, number: int) -> WakeRecord:
        for wake in self.wakes(agent):
            if wake.number == number:
                return wake
        raise StoreError(f"agent {agent!r} has no wake number {number}; see `wakeful agent show`")

    # --- events -----------------------------------------------------------------------

    def append_events(self, agent: str, items: Sequence[EventIn]) -> list[StoredEvent]:
        """Append in order; events whose step_key exists already are returned as stored.

        One statement per call whatever its size: the batch travels as one array per column
        and is unnested server-side (``INSERT ... SELECT FROM unnest ... ON CONFLICT DO
        NOTHING RETURNING``), so a bulk append costs one round trip and one plan rather than
        a statement per event.
        """
        if not items:
            return []
        columns: dict[str, list[Any]] = {name: [] for name in _APPEND_COLUMNS}
        for e in items:
            row = e.model_dump()
            row["content_hash"] = content_hash(e.text, e.kind, e.role or "", e.tool_call_id or "")
            row["tool_input"] = None if e.tool_input is None else json.dumps(e.tool_input)
            row["meta"] = json.dumps(e.meta)
            for name, values in columns.items():
                values.append(row[name])
        keys = columns["step_key"]
        with self.tx() as conn:
            inserted = conn.execute(_APPEND, {"tenant": self.name, "agent": agent, **columns}).all()
            by_key = {r.step_key: event_from_row(r._mapping) for r in inserted}
            missing = [k for k in keys if k not in by_key]
            if missing:  # a retry: these were appended before
                found = conn.execute(
                    select(t.events).where(
                        t.events.c.tenant == self.name, t.events.c.step_key.in_(missing)
                    )
                )
                by_key.update({r.step_key: event_from_row(r._mapping) for r in found})
        return [by_key[k] for k in keys]

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
        params = {"tenant": self.name, "agent": agent, "wake_id": wake_id, "max_id": max_id}
        with self.tx() as conn:
            rows = conn.execute(q if limit is None else q.limit(limit), params)
            out = [event_from_row(r._mapping) for r in rows]
        return out[::-1] if newest else out

    def event_by_step(self, step_key: str) -> StoredEvent | None:
        """The event a step wrote, if it did (one index lookup: a retry's first check)."""
        with self.tx() as conn:
            row = conn.execute(_BY_STEP[t.events], {"tenant": self.name, "key": step_key}).first()
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
        mine = [e.tenant == self.name, e.agent == agent, e.id <= max_id]
        with self.tx() as conn:
            if session_id is None or page == 1:
                newest = select(t.events).where(*mine).order_by(e.id.desc()).limit(limit)
                tail = newest.subquery()
                q = select(tail)
                if session_id is not None:
                    q = q.where(tail.c.session_id == session_id)
                return [event_from_row(r._mapping) for r in conn.execute(q.order_by(tail.c.id))]
            mine.append(e.session_id == session_id)
            ids = (
                conn.execute(
                    select(e.id).where(*mine).order_by(e.id.desc()).limit(limit + page - 1)
                )
                .scalars()
                .all()
            )
            first_id = ids[-1] if ids else 0
            if len(ids) > limit:
                total = conn.execute(select(func.count()).where(*mine)).scalar_one()
                first_id = ids[total - 1 - tail_start(total, limit, page)]
            q = select(t.events).where(*mine, e.id >= first_id).order_by(e.id)
            return [event_from_row(r._mapping) for r in conn.execute(q)]

    def knowledge_revision(self, agent: str) -> int:
        """The agent's last committed knowledge revision (:mod:`wakeful.substrate.revisions`)."""
        with self.tx() as conn:
            return current_revision(conn, self.name, agent)

    def max_event_id(self, agent: str) -> int:
        with self.tx() as conn:
            value = conn.execute(_MAX_EVENT_ID, {"tenant": self.name, "agent": agent}).scalar_one()
        return int(value)

    def count_events(self, agent: str) -> int:
        with self.tx() as conn:
            value = conn.execute(
                select(func.count()).where(
                    t.events.c.tenant == self.name, t.events.c.agent == agent
                )
            ).scalar_one()
        return int(value)

    def events_with_positions(
        self, agent: str, *, after_id: int, upto_id: int, limit: int
    ) -> list[tuple[StoredEvent, int]]:
        """Up to ``limit`` events with ``after_id < id <= upto_id``, in id order, each with
        its 0-based position among all of its session's events (0 for sessionless events).

        Positions are what vector chunks use as neighbours' coordinates (seq ± 1).
        """
        e = t.events.c
        with self.tx() as conn:
            rows = conn.execute(
                select(t.events)
                .where(e.tenant == self.name, e.agent == agent)
                .where(e.id > after_id, e.id <= upto_id)
                .order_by(e.id)
                .limit(limit)
            ).all()
            sessions = sorted({r.session_id for r in rows if r.session_id is not None})
            before: dict[str, int] = {}
            if sessions:
                counted = conn.execute(
                    select(e.session_id, func.count())
                    .where(e.tenant == self.name, e.agent == agent)
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

    # --- vector index cursors -----------------------------------------------------------

    def index_cursor(self, agent: str, collection: str) -> int:
        """The last event id of ``agent`` indexed into ``collection`` (0: none yet)."""
        c = t.index_cursors.c
        with self.tx() as conn:
            value = conn.execute(
                select(c.last_event_id).where(
                    c.tenant == self.name, c.agent == agent, c.collection == collection
                )
            ).scalar_one_or_none()
        return int(value or 0)

    def set_index_cursor(self, agent: str, collection: str, last_event_id: int) -> None:
        """Move the cursor forward; a cursor never moves back, except with ``reset``."""
        stmt = insert(t.index_cursors).values(
            tenant=self.name, agent=agent, collection=collection, last_event_id=last_event_id
        )
        with self.tx() as conn:
            conn.execute(
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
        with self.tx() as conn:
            conn.execute(
                update(t.index_cursors)
                .where(c.tenant == self.name, c.agent == agent, c.collection == collection)
                .values(last_event_id=0, updated_at=func.now())
            )

    # --- compiles and model calls --------------------------------------------------------

    def record_compile(self, rec: CompileRecord) -> CompileRecord:
        return CompileRecord.model_validate(self._put_once(t.compiles, rec.model_dump()))

    def record_model_call(self, rec: ModelCallRecord) -> ModelCallRecord:
        return ModelCallRecord.model_validate(self._put_once(t.model_calls, rec.model_dump()))

    def compiles(self, wake_id: str) -> list[CompileRecord]:
        return [CompileRecord.model_validate(r) for r in self._by_wake(t.compiles, wake_id)]

    def model_calls(self, wake_id: str) -> list[ModelCallRecord]:
        return [ModelCallRecord.model_validate(r) for r in self._by_wake(t.model_calls, wake_id)]

    def model_call_by_step(self, step_key: str) -> ModelCallRecord | None:
        with self.tx() as conn:
            query = _BY_STEP[t.model_calls]
            row = conn.execute(query, {"tenant": self.name, "key": step_key}).first()
        return None if row is None else ModelCallRecord.model_validate(dict(row._mapping))

    def _put_once(self, table: Any, values: dict[str, Any]) -> dict[str, Any]:
        with self.tx() as conn:
            row = conn.execute(_PUT_ONCE[table], {"tenant": self.name, **values}).first()
            if row is None:  # a retry, or a concurrent attempt wrote first: theirs stands
                key = {"tenant": self.name, "key": values["step_key"]}
                row = conn.execute(_BY_STEP[table], key).one()
        return dict(row._mapping)

    def _by_wake(self, table: Any, wake_id: str) -> list[dict[str, Any]]:
        with self.tx() as conn:
            rows = conn.execute(_by_wake_query(table), {"tenant": self.name, "wake_id": wake_id})
            return [dict(r._mapping) for r in rows]


# Hot reads are built once, with bound parameters: SQLAlchemy memoises a statement's cache
# key on the object, so a rebuilt statement per call cost about as much CPU as its round trip.
_MAX_EVENT_ID = select(func.coalesce(func.max(t.events.c.id), 0)).where(
    t.events.c.tenant == bindparam("tenant"), t.events.c.agent == bindparam("agent")
)
_START_WAKE = (
    insert(t.wakes)
    .on_conflict_do_nothing(index_elements=["tenant", "wake_id"])
    .returning(*t.wakes.c)
)
_FINISH_WAKE = (
    update(t.wakes)
    .where(t.wakes.c.tenant == bindparam("of_tenant"), t.wakes.c.wake_id == bindparam("wake"))
    .values(status=bindparam("new_status"), finished_at=bindparam("at"))
)
_BY_STEP = {
    table: select(table).where(
        table.c.tenant == bindparam("tenant"), table.c.step_key == bindparam("key")
    )
    for table in (t.events, t.model_calls, t.compiles)
}
# ``INSERT ... ON CONFLICT (tenant, step_key) DO NOTHING RETURNING *`` of step records.
_PUT_ONCE = {
    table: insert(table)
    .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
    .returning(*table.c)
    for table in (t.compiles, t.model_calls)
}
_WAKE_BY_KEY = (
    select(t.wakes)
    .where(
        t.wakes.c.tenant == bindparam("tenant"),
        t.wakes.c.agent == bindparam("agent"),
        t.wakes.c.idempotency_key == bindparam("key"),
    )
    .order_by(t.wakes.c.number)
    .limit(1)
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


@functools.cache
def _by_wake_query(table: Any) -> Select[Any]:
    return (
        select(table)
        .where(table.c.tenant == bindparam("tenant"), table.c.wake_id == bindparam("wake_id"))
        .order_by(table.c.call_index)
    )


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


_EVENT_FIELDS = frozenset(StoredEvent.model_fields)


def event_from_row(m: Any) -> StoredEvent:
    # Rows come from typed columns, so they are built without re-validation: a snapshot
    # reads hundreds of events per compile and validation was most of its cost.
    return StoredEvent.model_construct(**{k: v for k, v in m.items() if k in _EVENT_FIELDS})


def _wake(m: Any) -> WakeRecord:
    return WakeRecord.model_validate({k: m[k] for k in m.keys() if k != "tenant"})
