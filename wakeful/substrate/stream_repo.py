"""A streaming model call's pieces, for callers that tail a wake while it runs.

:class:`StreamRepo` writes what a model call has said so far (text pieces, tool calls) as
rows of ``wake_stream`` and announces each write on the ``wakeful_stream`` channel, with
the tenant and wake id as the payload (``NOTIFY`` is sent when the transaction commits, so
a listener never reads before the rows are there). Readers tail by row id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select

from wakeful.substrate import schema as t
from wakeful.substrate.tenant_repo import TenantRepo

__all__ = ["STREAM_CHANNEL", "StreamPiece", "StreamRepo", "stream_payload"]

STREAM_CHANNEL = "wakeful_stream"


def stream_payload(tenant: str, wake_id: str) -> str:
    """What a write announces: which tenant's wake has new pieces."""
    return f"{tenant}\t{wake_id}"


@dataclass(frozen=True)
class StreamPiece:
    id: int
    call_index: int
    kind: str
    data: dict[str, Any]


class StreamRepo(TenantRepo):
    """One tenant's streamed pieces, on one connection."""

    def publish_stream(
        self, agent: str, wake_id: str, call_index: int, pieces: list[tuple[str, dict[str, Any]]]
    ) -> None:
        """Append ``pieces`` (kind, data) in order and announce them."""
        if not pieces:
            return
        self.conn.execute(
            insert(t.wake_stream),
            [
                {
                    "tenant": self.tenant,
                    "agent": agent,
                    "wake_id": wake_id,
                    "call_index": call_index,
                    "kind": kind,
                    "data": data,
                }
                for kind, data in pieces
            ],
        )
        # The payload is stream_payload(tenant, wake_id), joined by the server so that the
        # statement binds the tenant as a value of its own, as every tenant's statement does.
        payload = func.concat(self.tenant, "\t", wake_id)
        self.conn.execute(select(func.pg_notify(STREAM_CHANNEL, payload)))

    def stream_since(self, wake_id: str, after: int = 0) -> list[StreamPiece]:
        """The wake's pieces after row ``after``, in order."""
        c = t.wake_stream.c
        rows = self.conn.execute(
            select(c.id, c.call_index, c.kind, c.data)
            .where(c.tenant == self.tenant, c.wake_id == wake_id, c.id > after)
            .order_by(c.id)
        )
        return [StreamPiece(int(r.id), int(r.call_index), str(r.kind), dict(r.data)) for r in rows]

    def keep_latest_stream(self, agent: str, wake_id: str) -> None:
        """Forget the pieces of ``agent``'s wakes but ``wake_id`` (the one that just ended:
        a reader may still be reading it; the stored replies are the record)."""
        c = t.wake_stream.c
        self.conn.execute(
            delete(t.wake_stream).where(
                c.tenant == self.tenant, c.agent == agent, c.wake_id != wake_id
            )
        )
