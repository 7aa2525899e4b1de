"""How the ingress is served: uvicorn, with the limits a public endpoint needs.

uvicorn bounds the idle time between requests (keep-alive) but not the time a request takes
to arrive: a client that trickles its headers or its body a byte at a time holds a
connection (and the buffered bytes) for as long as it likes, and a few hundred such clients
exhaust the server. So:

* every request must arrive whole — request line, headers and body — within
  ``read_timeout_s`` of its first byte (or of the connection opening); a connection still
  reading when the deadline passes is closed;
* an idle keep-alive connection is closed after ``keep_alive_s``;
* at most ``max_connections`` are served at once (more are answered 503 by uvicorn);
* a request's headers are at most ``max_header_bytes`` (h11's incomplete-event limit).

The app itself refuses what it can before reading a body (``ingress.py``), so a refused
delivery costs neither the deadline nor the buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "KEEP_ALIVE_S",
    "MAX_CONNECTIONS",
    "MAX_HEADER_BYTES",
    "READ_TIMEOUT_S",
    "server_config",
]

READ_TIMEOUT_S = 15.0
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 512
MAX_HEADER_BYTES = 16 * 1024

# Their side is done sending the request (or the connection is over): no deadline applies.
_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


class _ReadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline on reading each request."""

    read_timeout_s = READ_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a request is cut off too

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state not in _READ:
            self._arm()  # the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state in _READ:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout_s, self._read_timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _read_timed_out(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.logger.info("closing a connection whose request did not arrive in time")
            self.transport.close()  # the app, if it was reading the body, sees a disconnect


def server_config(
    app: Any,
    *,
    log_level: str = "info",
    read_timeout_s: float = READ_TIMEOUT_S,
    keep_alive_s: int = KEEP_ALIVE_S,
    max_connections: int = MAX_CONNECTIONS,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> uvicorn.Config:
    """The uvicorn configuration ``wakeful ingress serve`` runs ``app`` with."""
    protocol = type(
        "IngressH11Protocol", (_ReadDeadlineProtocol,), {"read_timeout_s": read_timeout_s}
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
