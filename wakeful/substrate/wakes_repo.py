"""Wakes and their ledger: each wake's record, and the compiles and model calls it made.

:class:`WakesRepo` works on one tenant's wakes, on the connection it is given (a unit of
work's: :mod:`wakeful.substrate.unit_of_work`). Writes that an activity makes are idempotent:
a wake on its id, a compile or model call on its ``step_key``; a retry returns the first
write.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert

from wakeful.errors import StoreError
from wakeful.names import child_prefix
from wakeful.substrate import schema as t
from wakeful.substrate.blobs import STORE_BLOB_ROWS, BlobsRepo, blob_arrays
from wakeful.substrate.records import CompileRecord, ModelCallRecord, Spend, WakeRecord
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["WakesRepo"]


class WakesRepo(TenantRepo):
    """One tenant's wakes, compiles and model calls, on one connection."""

    # --- wakes ------------------------------------------------------------------------

    def start_wake(self, wake: WakeRecord) -> WakeRecord:
        """Record a wake; a retry (same wake id) returns the first record."""
        # RETURNING answers the first write in one round trip; only a retry reads.
        row = self.conn.execute(_START_WAKE, {"tenant": self.tenant, **wake.model_dump()}).first()
        if row is None:
            row = self.conn.execute(
                select(t.wakes).where(
                    t.wakes.c.tenant == self.tenant, t.wakes.c.wake_id == wake.wake_id
                )
            ).one()
        return _wake(row._mapping)

    def finish_wake(self, wake_id: str, status: str, at: datetime) -> None:
        self.conn.execute(
            _FINISH_WAKE,
            {"of_tenant": self.tenant, "wake": wake_id, "new_status": status, "at": at},
        )

    def finish_wake_keeping_its_stream(
        self, agent: str, wake_id: str, status: str, at: datetime
    ) -> None:
        """:meth:`finish_wake`, and the stream pieces of ``agent``'s other wakes forgotten
        (``StreamRepo.keep_latest_stream``), in one statement: how a wake that ended with
        its replies stored closes."""
        self.conn.execute(
            _FINISH_WAKE_KEEPING_ITS_STREAM,
            {"of_tenant": self.tenant, "of_agent": agent, "wake": wake_id}
            | {"new_status": status, "at": at},
        )

    def wakes(self, agent: str) -> list[WakeRecord]:
        rows = self.conn.execute(
            select(t.wakes)
            .where(t.wakes.c.tenant == self.tenant, t.wakes.c.agent == agent)
            .order_by(t.wakes.c.number)
        )
        return [_wake(r._mapping) for r in rows]

    def wake_by_key(self, agent: str, idempotency_key: str) -> WakeRecord | None:
        """The first wake a trigger with this idempotency key started, if any."""
        params = {"tenant": self.tenant, "agent": agent, "key": idempotency_key}
        row = self.conn.execute(_WAKE_BY_KEY, params).first()
        return None if row is None else _wake(row._mapping)

    def wake_by_number(self, agent: str, number: int) -> WakeRecord:
        for wake in self.wakes(agent):
            if wake.number == number:
                return wake
        raise StoreError(f"agent {agent!r} has no wake number {number}; see `wakeful agent show`")

    # --- compiles and model calls --------------------------------------------------------

    def record_compile(self, rec: CompileRecord) -> CompileRecord:
        return CompileRecord.model_validate(self._put_once(t.compiles, rec.model_dump()))

    def record_compile_with_blobs(
        self, rec: CompileRecord, blobs: Sequence[Mapping[str, str]]
    ) -> CompileRecord:
        """The ``blobs`` rows (``BlobsRepo.blob_rows``: a compile's window, ledger, policy
        and spec) stored and ``rec`` recorded (once per step: a retry gets the first
        record), in one statement."""
        return CompileRecord.model_validate(self._put_once(t.compiles, rec.model_dump(), blobs))

    def record_model_call(self, rec: ModelCallRecord) -> ModelCallRecord:
        return ModelCallRecord.model_validate(self._put_once(t.model_calls, rec.model_dump()))

    def record_model_call_with_output(
        self, rec: ModelCallRecord, output: str
    ) -> tuple[ModelCallRecord, str]:
        """The reply ``output`` stored as a ``model_output`` blob and ``rec`` recorded (once
        per step: a retry, or a concurrent attempt, gets the first record), in one
        statement; the record and the hash of the blob stored."""
        (digest,), blob = BlobsRepo(self.conn, self.tenant).blob_rows([("model_output", output)])
        row = self._put_once(t.model_calls, rec.model_dump(), blob)
        return ModelCallRecord.model_validate(row), digest

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
            "tenant": self.tenant,
            "agent": agent,
            "children": _like_prefix(child_prefix(agent)),
            "since": since,
        }
        usd, tokens = self.conn.execute(_SPEND_SINCE, params).one()
        return Spend(usd=float(usd), tokens=int(tokens))

    def compile_alternates(self, wake_id: str, call_index: int) -> dict[str, Any] | None:
        """The failover routes the wake's compile for ``call_index`` rendered (None: none)."""
        c = t.compiles.c
        return self.conn.execute(
            select(c.alternates).where(
                c.tenant == self.tenant, c.wake_id == wake_id, c.call_index == call_index
            )
        ).scalar_one_or_none()

    def model_call_by_step(self, step_key: str) -> ModelCallRecord | None:
        query = _BY_STEP[t.model_calls]
        row = self.conn.execute(query, {"tenant": self.tenant, "key": step_key}).first()
        return None if row is None else ModelCallRecord.model_validate(dict(row._mapping))

    def _put_once(
        self, table: Any, values: dict[str, Any], blobs: Sequence[Mapping[str, str]] = ()
    ) -> dict[str, Any]:
        """``values`` inserted into ``table`` once per step key (the row stored first is
        returned), with ``blobs`` (rows of ``BlobsRepo.blob_rows``) stored in the same
        statement."""
        params = {"tenant": self.tenant, **values}
        if blobs:
            params |= blob_arrays(self.tenant, blobs)
        statement = _PUT_ONCE_WITH_BLOBS[table] if blobs else _PUT_ONCE[table]
        row = self.conn.execute(statement, params).first()
        if row is None:  # a retry, or a concurrent attempt wrote first: theirs stands
            key = {"tenant": self.tenant, "key": values["step_key"]}
            row = self.conn.execute(_BY_STEP[table], key).one()
        return dict(row._mapping)

    def _by_wake(self, table: Any, wake_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(_by_wake_query(table), {"tenant": self.tenant, "wake_id": wake_id})
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
_s = t.wake_stream.c
_FINISH_WAKE_KEEPING_ITS_STREAM = _FINISH_WAKE.add_cte(
    delete(t.wake_stream)
    .where(
        _s.tenant == bindparam("of_tenant"),
        _s.agent == bindparam("of_agent"),
        _s.wake_id != bindparam("wake"),
    )
    .cte("forgotten")
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
_PUT_ONCE_WITH_BLOBS = {
    table: statement.add_cte(STORE_BLOB_ROWS.cte("stored"))
    for table, statement in _PUT_ONCE.items()
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
