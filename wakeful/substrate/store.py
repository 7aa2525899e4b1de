"""Repositories over the substrate tables.

``Store`` owns the engine; ``Store.tenant(name)`` returns a :class:`TenantStore`, and every
read or write goes through one, so no public method can touch another tenant's rows. Writes
that an activity makes are idempotent on ``step_key``: a retry returns the first write.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import OperationalError

from wakeful.compiler.blocks import content_hash
from wakeful.errors import StoreError, UnknownAgentError
from wakeful.substrate import schema as t
from wakeful.substrate.knowledge import KnowledgeMixin
from wakeful.substrate.migrate import migrate
from wakeful.substrate.records import (
    CompileRecord,
    EventIn,
    ModelCallRecord,
    StoredEvent,
    WakeRecord,
)


class Store:
    """The substrate's rows in Postgres."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def connect(cls, url: str, *, migrate_schema: bool = True) -> Store:
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
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


class TenantStore(KnowledgeMixin):
    """Every repository method, bound to one tenant."""

    def __init__(self, engine: Engine, tenant: str) -> None:
        self.engine = engine
        self.name = tenant

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

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
            conn.execute(
                insert(t.wakes)
                .values(tenant=self.name, **wake.model_dump())
                .on_conflict_do_nothing(index_elements=["tenant", "wake_id"])
            )
            row = conn.execute(
                select(t.wakes).where(
                    t.wakes.c.tenant == self.name, t.wakes.c.wake_id == wake.wake_id
                )
            ).one()
        return _wake(row._mapping)

    def finish_wake(self, wake_id: str, status: str, at: datetime) -> None:
        with self.tx() as conn:
            conn.execute(
                update(t.wakes)
                .where(t.wakes.c.tenant == self.name, t.wakes.c.wake_id == wake_id)
                .values(status=status, finished_at=at)
            )

    def wakes(self, agent: str) -> list[WakeRecord]:
        with self.tx() as conn:
            rows = conn.execute(
                select(t.wakes)
                .where(t.wakes.c.tenant == self.name, t.wakes.c.agent == agent)
                .order_by(t.wakes.c.number)
            )
            return [_wake(r._mapping) for r in rows]

    def wake_by_number(self, agent: str, number: int) -> WakeRecord:
        for wake in self.wakes(agent):
            if wake.number == number:
                return wake
        raise StoreError(f"agent {agent!r} has no wake number {number}; see `wakeful agent show`")

    # --- events -----------------------------------------------------------------------

    def append_events(self, agent: str, items: Sequence[EventIn]) -> list[StoredEvent]:
        """Append in order; events whose step_key exists already are returned as stored."""
        if not items:
            return []
        rows = [
            {
                "tenant": self.name,
                "agent": agent,
                "content_hash": content_hash(e.text, e.kind, e.role or "", e.tool_call_id or ""),
                **e.model_dump(),
            }
            for e in items
        ]
        keys = [e.step_key for e in items]
        with self.tx() as conn:
            conn.execute(
                insert(t.events).on_conflict_do_nothing(index_elements=["tenant", "step_key"]),
                rows,
            )
            found = conn.execute(
                select(t.events).where(
                    t.events.c.tenant == self.name, t.events.c.step_key.in_(keys)
                )
            )
            by_key = {r.step_key: _event(r._mapping) for r in found}
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
        q = select(t.events).where(t.events.c.tenant == self.name, t.events.c.agent == agent)
        if wake_id is not None:
            q = q.where(t.events.c.wake_id == wake_id)
        if max_id is not None:
            q = q.where(t.events.c.id <= max_id)
        if not include_retired:
            q = q.where(t.events.c.retired_at.is_(None))
        q = q.order_by(t.events.c.id.desc() if newest else t.events.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self.tx() as conn:
            out = [_event(r._mapping) for r in conn.execute(q)]
        return out[::-1] if newest else out

    def max_event_id(self, agent: str) -> int:
        with self.tx() as conn:
            value = conn.execute(
                select(func.coalesce(func.max(t.events.c.id), 0)).where(
                    t.events.c.tenant == self.name, t.events.c.agent == agent
                )
            ).scalar_one()
        return int(value)

    def count_events(self, agent: str) -> int:
        with self.tx() as conn:
            value = conn.execute(
                select(func.count()).where(
                    t.events.c.tenant == self.name, t.events.c.agent == agent
                )
            ).scalar_one()
        return int(value)

    # --- blobs (claim-check) ------------------------------------------------------------

    def put_blob(self, kind: str, content: str) -> str:
        digest = content_hash(content)
        with self.tx() as conn:
            conn.execute(
                insert(t.blobs)
                .values(tenant=self.name, hash=digest, kind=kind, content=content)
                .on_conflict_do_nothing(index_elements=["tenant", "hash"])
            )
        return digest

    def get_blob(self, digest: str) -> str:
        with self.tx() as conn:
            value = conn.execute(
                select(t.blobs.c.content).where(
                    t.blobs.c.tenant == self.name, t.blobs.c.hash == digest
                )
            ).scalar_one_or_none()
        if value is None:
            raise StoreError(f"no blob {digest} in tenant {self.name!r}")
        return str(value)

    # --- compiles and model calls --------------------------------------------------------

    def record_compile(self, rec: CompileRecord) -> CompileRecord:
        return CompileRecord.model_validate(self._put_once(t.compiles, rec.model_dump()))

    def record_model_call(self, rec: ModelCallRecord) -> ModelCallRecord:
        return ModelCallRecord.model_validate(self._put_once(t.model_calls, rec.model_dump()))

    def compiles(self, wake_id: str) -> list[CompileRecord]:
        return [CompileRecord.model_validate(r) for r in self._by_wake(t.compiles, wake_id)]

    def model_calls(self, wake_id: str) -> list[ModelCallRecord]:
        return [ModelCallRecord.model_validate(r) for r in self._by_wake(t.model_calls, wake_id)]

    def _put_once(self, table: Any, values: dict[str, Any]) -> dict[str, Any]:
        with self.tx() as conn:
            conn.execute(
                insert(table)
                .values(tenant=self.name, **values)
                .on_conflict_do_nothing(index_elements=["tenant", "step_key"])
            )
            row = conn.execute(
                select(table).where(
                    table.c.tenant == self.name, table.c.step_key == values["step_key"]
                )
            ).one()
        return dict(row._mapping)

    def _by_wake(self, table: Any, wake_id: str) -> list[dict[str, Any]]:
        with self.tx() as conn:
            rows = conn.execute(
                select(table)
                .where(table.c.tenant == self.name, table.c.wake_id == wake_id)
                .order_by(table.c.call_index)
            )
            return [dict(r._mapping) for r in rows]


def _event(m: Any) -> StoredEvent:
    return StoredEvent.model_validate({k: m[k] for k in m.keys() if k not in ("tenant", "agent")})


def _wake(m: Any) -> WakeRecord:
    return WakeRecord.model_validate({k: m[k] for k in m.keys() if k != "tenant"})
