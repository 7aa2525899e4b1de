"""Addresses, URLs and free ports.

Operators paste addresses in whatever shape their platform prints them: ``postgres://`` from
a cloud console, ``http://localhost:7233`` for Temporal. These helpers turn each into the one
form its client needs, so the rest of the code only ever sees that form and a typo fails at
start-up with a message, not at the first query.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_TEMPORAL_PORT",
    "SIMULATOR_PORT",
    "UI_PORT",
    "find_free_port",
    "is_port_free",
    "libpq_url",
    "port_accepts",
    "sqlalchemy_url",
    "temporal_target",
]

DEFAULT_TEMPORAL_PORT = 7233
# Default ports of the loopback servers a person starts by hand: two, so both can run.
UI_PORT = 8765  # wakeful ui
SIMULATOR_PORT = 8766  # python -m wakeful.testing.simulator

_SQLALCHEMY_SCHEME = "postgresql+psycopg"
_POSTGRES_SCHEMES = ("postgres", "postgresql", _SQLALCHEMY_SCHEME)


def sqlalchemy_url(url: str) -> str:
    """Return ``url`` as a SQLAlchemy URL that uses the psycopg 3 driver.

    ``postgres://`` and ``postgresql://`` are rewritten; any other driver is refused,
    because only psycopg 3 is installed and a wrong driver would fail much later.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in _POSTGRES_SCHEMES:
        raise ValueError("expected a postgres://, postgresql:// or postgresql+psycopg:// URL")
    return f"{_SQLALCHEMY_SCHEME}://{rest}"


def libpq_url(url: str) -> str:
    """Return ``url`` in the ``postgresql://`` form that psycopg.connect and libpq accept."""
    return "postgresql://" + sqlalchemy_url(url).partition("://")[2]


def temporal_target(address: str) -> str:
    """Return a Temporal frontend address as the ``host:port`` the SDK connects to.

    Accepts ``host:port``, a bare ``host`` (port 7233) and URLs such as
    ``http://host:port`` or ``grpc://host:port``; a path or query is refused because the
    SDK would silently ignore it.
    """
    text = address.strip()
    if not text:
        raise ValueError("expected host:port, e.g. localhost:7233")
    parts = urlsplit(text if "://" in text else f"//{text}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("expected host:port or a URL without a path, e.g. localhost:7233")
    try:
        port = parts.port or DEFAULT_TEMPORAL_PORT
    except ValueError as err:
        raise ValueError("expected host:port with a numeric port, e.g. localhost:7233") from err
    host = parts.hostname
    if not host:
        raise ValueError("expected host:port, e.g. localhost:7233")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind ``host:port`` now.

    SO_REUSEADDR mirrors what Go and Postgres servers set, so a port that only has
    connections in TIME_WAIT counts as free, as it would for them.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def find_free_port(candidates: Iterable[int], host: str = "127.0.0.1") -> int | None:
    """The first of ``candidates`` that is free, or None.

    A fixed candidate range (rather than an OS-chosen ephemeral port) keeps the address of
    an embedded server stable across restarts, so a worker configured with it keeps working.
    """
    for port in candidates:
        if 0 < port < 65536 and is_port_free(port, host):
            return port
    return None


def port_accepts(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
