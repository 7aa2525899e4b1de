"""Connection liveness: a pooled connection is pinged only when it sat idle.

SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a round trip per transaction, and a
wake runs a dozen transactions. A connection that was in use a moment ago is alive unless
the server went away since; then its statement fails, SQLAlchemy invalidates the pool, and
the activity's retry runs on a fresh connection (every write is idempotent on its step, so
nothing is doubled or lost). A connection idle for longer — the case pings exist for: a
server restarted overnight, a proxy that dropped the socket — is pinged at checkout and
replaced if the ping fails, so the caller never sees it.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, event, exc

__all__ = ["IDLE_PING_S", "ping_when_idle"]

IDLE_PING_S = 10.0
_CHECKED_IN = "wakeful_checked_in_at"


def ping_when_idle(engine: Engine, idle_s: float = IDLE_PING_S) -> None:
    """Ping a connection at checkout when it was checked in more than ``idle_s`` ago."""

    def checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info[_CHECKED_IN] = time.monotonic()

    def checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_CHECKED_IN)
        if since is None or time.monotonic() - since < idle_s:
            return  # just connected, or in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as err:  # the pool replaces it and checks out another
            raise exc.DisconnectionError(f"an idle connection failed its ping: {err}") from err

    event.listen(engine, "checkin", checkin)
    event.listen(engine, "checkout", checkout)
