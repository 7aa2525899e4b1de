"""Repositories over the substrate tables.

``Store`` owns the engine; ``Store.tenant(name)`` returns a :class:`TenantStore`, and every
read or write goes through one, so no public method can touch another tenant's rows. Writes
that an activity makes are idempotent on ``step_key``: a retry returns the first write.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Select,
    bindparam,
    create_engine,
    func,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import OperationalError

from wakeful.compiler.blocks import content_hash
from wakeful.errors import StoreError, UnknownAgentError
from wakeful.names import check_tenant, child_prefix
from wakeful.substrate import schema as t
from wakeful.substrate.blobs import BlobsMixin
from wakeful.substrate.claims import ClaimsMixin
from wakeful.substrate.events_repo import EventsMixin
from wakeful.substrate.knowledge import KnowledgeMixin
from wakeful.substrate.liveness import ping_when_idle
from wakeful.substrate.migrate import migrate
from wakeful.substrate.pg_safe import install as install_pg_safe
from wakeful.substrate.pg_safe import pg_json
from wakeful.substrate.records import (
    CompileRecord,
    ModelCallRecord,
    Spend,
    WakeRecord,
)


class Store:
    """The substrate's rows in Postgres."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Text Postgres would refuse (NUL, lone surrogates) is cleaned on the way in, for
        # every statement: a bad byte from the world must never fail a write forever.
        install_pg_safe(engine)

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
        """The repository scoped to ``tenant`` (a valid name: :mod:`wakeful.names`)."""
        return TenantStore(self.engine, check_tenant(tenant))

    def close(self) -> None:
        self.engine.dispose()


class TenantStore(EventsMixin, KnowledgeMixin, BlobsMixin, ClaimsMixin):
    """Every repository method, bound to one tenant."""

    def __init__(self, engine: Engine, tenant: str) -> None:
        self.engine = engine
        self.name = tenant
        self._open = threading.local()

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """A transaction. Nested calls on one thread join the outermost one, so a caller
        can run several repository reads in one transaction and one connection checkout
        (``sources.load_blocks`` does), and several writes atomically."""
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
        spec = pg_json(spec)  # hashed as stored
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

    def spend_since(self, agent: str, since: datetime) -> Spend:
        """What ``agent``'s model calls, and its children's, cost in the wakes started at or
        after ``since``.

        A call counts at its wake's start (workflow time, so a time-skipping test server's
        clock and a replay agree), not at the row's wall-clock insert time: a wake that runs
        across midnight is spent on the day it started."""
        params = {
            "tenant": self.name,
            "agent": agent,
            "children": _like_prefix(child_prefix(agent)),
            "since": since,
        }
        with self.tx() as conn:
            usd, tokens = conn.execute(_SPEND_SINCE, params).one()
        return Spend(usd=float(usd), tokens=int(tokens))

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
    for table in (t.model_calls, t.compiles)
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


_mc, _w = t.model_calls.c, t.wakes.c
_SPEND_SINCE = (
    select(
        func.coalesce(func.sum(_mc.cost_usd), 0.0),
        func.coalesce(
            func.sum(
                _mc.input_tokens
                + _mc.output_tokens
                + _mc.cache_creation_input_tokens
                + _mc.cache_read_input_tokens
            ),
            0,
        ),
    )
    .select_from(
        t.wakes.join(t.model_calls, (_mc.tenant == _w.tenant) & (_mc.wake_id == _w.wake_id))
    )
    .where(
        _w.tenant == bindparam("tenant"),
        # The agent's own wakes and its children's (``<agent>/child/<n>``, nested too):
        # a delegation is spent on the parent's behalf.
        (_w.agent == bindparam("agent")) | _w.agent.like(bindparam("children"), escape="\\"),
        _w.started_at >= bindparam("since"),
    )
)


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching what starts with ``prefix`` (``_`` and ``%`` taken literally)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@functools.cache
def _by_wake_query(table: Any) -> Select[Any]:
    return (
        select(table)
        .where(table.c.tenant == bindparam("tenant"), table.c.wake_id == bindparam("wake_id"))
        .order_by(table.c.call_index)
    )


def _wake(m: Any) -> WakeRecord:
    return WakeRecord.model_validate({k: m[k] for k in m.keys() if k != "tenant"})
