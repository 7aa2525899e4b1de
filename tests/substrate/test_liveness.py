"""Pooled connections against a real Postgres whose backend goes away: an idle connection is
pinged and replaced before anyone uses it; a busy one is not pinged, and the one statement
that meets the dead socket fails as a disconnect, after which the pool is fresh."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError

from wakeful.substrate.liveness import ping_when_idle


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    e = create_engine(pg_url, pool_size=1, max_overflow=0)
    yield e
    e.dispose()


def _backend(e: Engine) -> int:
    with e.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(pg_url: str, pid: int) -> None:
    other = create_engine(pg_url, poolclass=None)
    with other.connect() as conn:
        # With a timeout the server waits until the backend has actually exited (true), so
        # the test never races the signal; 60 s only bounds a server that never lets it go.
        gone = conn.execute(
            text("SELECT pg_terminate_backend(:pid, 60000)"), {"pid": pid}
        ).scalar_one()
    other.dispose()
    assert gone, f"backend {pid} did not exit within 60 s of pg_terminate_backend"


def _pings(e: Engine) -> list[int]:
    seen: list[int] = []
    real = e.dialect.do_ping

    def counted(dbapi_conn: object) -> bool:
        seen.append(1)
        return real(dbapi_conn)

    e.dialect.do_ping = counted  # type: ignore[method-assign]
    return seen


def test_an_idle_connection_whose_backend_died_is_replaced_at_checkout(
    engine: Engine, pg_url: str
) -> None:
    ping_when_idle(engine, idle_s=0.0)  # every checked-in connection counts as idle
    pings = _pings(engine)
    first = _backend(engine)
    _terminate(pg_url, first)
    assert _backend(engine) != first  # no error reached the caller
    assert pings, "the idle connection was never pinged"


def test_a_busy_connection_is_not_pinged_and_a_dead_one_fails_once(
    engine: Engine, pg_url: str
) -> None:
    ping_when_idle(engine, idle_s=3600.0)
    pings = _pings(engine)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    first = _backend(engine)
    for _ in range(5):
        assert _backend(engine) == first
    assert not pings and len(statements) == 6  # no ping round trip per checkout
    _terminate(pg_url, first)
    with pytest.raises(OperationalError) as failed:
        _backend(engine)
    assert failed.value.connection_invalidated
    assert _backend(engine) != first  # the next checkout has a fresh connection
