"""Following a wake while it runs: what its model calls say, as they say it.

A streaming model call publishes its text pieces and tool calls to the substrate
(``wake_stream`` rows, announced on the ``wakeful_stream`` channel: see
:mod:`wakeful.activities.streaming`); Temporal carries only the wake's ids and result, so
its history does not grow with the deltas. :func:`tail_wake` yields a
wake's events from Postgres as they come (``LISTEN`` wakes it; it reads rows by
id, so nothing is read twice and a missed notice is made up at the next read), then the
wake's result. An agent's rows are kept until its next wake ends, so a reader that falls
behind still reads every piece before the result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from wakeful.contracts import WakeResult
from wakeful.substrate.stream_repo import STREAM_CHANNEL, stream_payload

__all__ = ["TextDelta", "ToolCallEvent", "WakeEvent", "WakeFinished", "tail_wake"]

# How long a reader waits for a notice before it reads anyway (a notice sent while it was
# reading is not lost: the next read finds the rows).
_POLL_S = 0.5


@dataclass(frozen=True)
class TextDelta:
    """A piece of text of model call ``call_index`` of the wake."""

    text: str
    call_index: int


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call the model made (its arguments complete), before the tool runs."""

    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    call_index: int = 0


@dataclass(frozen=True)
class WakeFinished:
    """The wake ended: its result, with the whole answer in ``output``."""

    result: WakeResult


WakeEvent = TextDelta | ToolCallEvent | WakeFinished


def conninfo(database_url: str) -> str:
    """A libpq connection string for a SQLAlchemy URL (``postgresql+psycopg://...``)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _event(call_index: int, kind: str, data: dict[str, Any]) -> TextDelta | ToolCallEvent:
    if kind == "text":
        return TextDelta(str(data.get("text", "")), call_index)
    return ToolCallEvent(
        str(data.get("id", "")),
        str(data.get("name", "")),
        dict(data.get("input") or {}),
        call_index,
    )


async def tail_wake(
    database_url: str,
    tenant: str,
    agent: str,
    idempotency_key: str,
    finished: asyncio.Future[Any],
) -> AsyncIterator[TextDelta | ToolCallEvent]:
    """The pieces of the wake ``idempotency_key`` woke, as they are published, until
    ``finished`` is done (then what was published before it ended)."""
    async with await psycopg.AsyncConnection.connect(
        conninfo(database_url), autocommit=True
    ) as conn:
        await conn.execute(f"LISTEN {STREAM_CHANNEL}")
        wake_id: str | None = None
        after = 0
        while True:
            ended = finished.done()  # read before the rows: what came before it is read
            if wake_id is None:
                cur = await conn.execute(
                    "SELECT wake_id FROM wakes WHERE tenant = %s AND agent = %s"
                    " AND idempotency_key = %s ORDER BY number DESC LIMIT 1",
                    (tenant, agent, idempotency_key),
                )
                row = await cur.fetchone()
                wake_id = None if row is None else str(row[0])
            if wake_id is not None:
                cur = await conn.execute(
                    "SELECT id, call_index, kind, data FROM wake_stream WHERE tenant = %s"
                    " AND wake_id = %s AND id > %s ORDER BY id",
                    (tenant, wake_id, after),
                )
                for piece_id, call_index, kind, data in await cur.fetchall():
                    after = int(piece_id)
                    yield _event(int(call_index), str(kind), dict(data))
            if ended:
                return
            await _notice_or_end(conn, stream_payload(tenant, wake_id or ""), finished)


async def _notice_or_end(
    conn: psycopg.AsyncConnection[Any], payload: str, finished: asyncio.Future[Any]
) -> None:
    """Wait for a notice about this wake (any notice, before its id is known), the end of
    the wake, or ``_POLL_S``, whichever comes first."""

    async def notice() -> None:
        async for note in conn.notifies(timeout=_POLL_S):
            if payload.endswith("\t") or note.payload == payload:
                return

    waiter = asyncio.ensure_future(notice())
    try:
        await asyncio.wait({waiter, finished}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError, psycopg.Error):
                await waiter
