"""How the ingress is served: uvicorn, with the limits a public endpoint needs.

uvicorn bounds the idle time between requests (keep-alive) but not the time a request takes
to arrive, and it counts every open connection, idle or not, against its connection limit:
a client that opens connections and sends nothing (or trickles its headers or its body a
byte at a time) holds them as long as it likes, and a few hundred such sockets answer every
other sender 503. So:

* a request's line and headers must arrive within ``header_timeout_s`` of the connection
  opening (or of the first byte of the next request on a kept-alive connection): an idle
  or trickling connection is closed then;
* the whole request — line, headers and body — must arrive within ``read_timeout_s`` of
  the same moment; a connection still reading when the deadline passes is closed;
* one client address holds at most ``max_connections_per_client`` connections at once: a
  connection over that is closed as it opens, before it is served, so one client cannot
  hold the slots every other sender needs (0: no per-client limit);
* an idle keep-alive connection is closed after ``keep_alive_s``;
* at most ``max_connections`` are served at once (more are answered 503 by uvicorn);
* a request's headers are at most ``max_header_bytes`` (h11's incomplete-event limit).

The app itself refuses what it can before reading a body (``ingress.py``), so a refused
delivery costs neither the deadline nor the buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "HEADER_TIMEOUT_S",
    "KEEP_ALIVE_S",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_CLIENT",
    "MAX_HEADER_BYTES",
    "READ_TIMEOUT_S",
    "server_config",
]

HEADER_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 15.0
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 512
MAX_CONNECTIONS_PER_CLIENT = 32
MAX_HEADER_BYTES = 16 * 1024

# Their side is done sending the request (or the connection is over): no deadline applies.
_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


class _ReadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with deadlines on reading each request and a limit on the
    connections one client address holds."""

    header_timeout_s = HEADER_TIMEOUT_S
    read_timeout_s = READ_TIMEOUT_S
    max_connections_per_client = MAX_CONNECTIONS_PER_CLIENT
    # Open connections by client address, shared by every connection of one server (each
    # server_config makes a subclass with a table of its own).
    held_by_client: ClassVar[dict[str, int]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_deadline: asyncio.TimerHandle | None = None
        self._held_for: str | None = None  # the client address this connection counts for

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._admit():
            self.logger.info(
                "closing a connection from %s: it holds %d already",
                self.client[0] if self.client else "?",
                self.max_connections_per_client,
            )
            transport.close()
            return
        self._arm()  # a connection that never sends a request is cut off too

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state not in _READ:
            self._arm()  # the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._cancel_header_deadline()
        if self.conn.their_state in _READ:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._held_for is not None:
            left = self.held_by_client.get(self._held_for, 1) - 1
            if left > 0:
                self.held_by_client[self._held_for] = left
            else:
                self.held_by_client.pop(self._held_for, None)
            self._held_for = None
        super().connection_lost(exc)

    def _admit(self) -> bool:
        """Count this connection for its client address; False when that is over the limit."""
        limit = self.max_connections_per_client
        if not limit or self.client is None:  # no limit, or a peer without an address
            return True
        address = self.client[0]
        held = self.held_by_client.get(address, 0)
        if held >= limit:
            return False
        self.held_by_client[address] = held + 1
        self._held_for = address
        return True

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout_s, self._timed_out, "request")
        self._header_deadline = self.loop.call_later(
            self.header_timeout_s, self._timed_out, "headers"
        )

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _disarm(self) -> None:
        self._cancel_header_deadline()
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self, what: str) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.logger.info("closing a connection whose %s did not arrive in time", what)
            self.transport.close()  # the app, if it was reading the body, sees a disconnect


def server_config(
    app: Any,
    *,
    log_level: str = "info",
    header_timeout_s: float = HEADER_TIMEOUT_S,
    read_timeout_s: float = READ_TIMEOUT_S,
    keep_alive_s: int = KEEP_ALIVE_S,
    max_connections: int = MAX_CONNECTIONS,
    max_connections_per_client: int = MAX_CONNECTIONS_PER_CLIENT,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> uvicorn.Config:
    """The uvicorn configuration ``wakeful ingress serve`` runs ``app`` with."""
    protocol = type(
        "IngressH11Protocol",
        (_ReadDeadlineProtocol,),
        {
            "header_timeout_s": min(header_timeout_s, read_timeout_s),
            "read_timeout_s": read_timeout_s,
            "max_connections_per_client": max_connections_per_client,
            "held_by_client": {},
        },
    )
    return uvicorn.Config(
        app,
        http=protocol,
        log_level=log_level,
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=keep_alive_s,
        limit_concurrency=max_connections,
        h11_max_incomplete_event_size=max_header_bytes,
    )
