"""A tool's own failures told apart from the store's and the worker's, and error text fit
for a model to read.

A tool call fails either because the tool failed (it raised, or did not return in time) or
because what runs it did: the substrate's database went away, the worker died. Only the
first is the tool's: it counts against the tool's ``max_attempts`` and the model reads it.
The second is retried until the piece returns (``workflows.retries.TOOL_INFRA_RETRY``), and
never reaches a transcript. :func:`is_infrastructure` tells an exception of the store from
the others; :func:`model_text` and :func:`exception_text` keep host paths and database
drivers' messages out of whatever error text does reach a transcript.

Pure (no I/O, nothing imported but ``re``), so workflows use it too.
"""

from __future__ import annotations

import re

__all__ = ["exception_text", "is_driver_error", "is_infrastructure", "model_text"]

# Database drivers and SQLAlchemy, by the module their classes live in (neither is imported
# here: workflows use this module, and a tool may use any driver).
_DRIVERS = ("psycopg", "psycopg2", "psycopg_pool", "sqlalchemy", "asyncpg")
# Their classes whose failure means the connection (or the server) failed, not a statement:
# another attempt succeeds once the database is back.
_CONNECTION = frozenset(
    {"OperationalError", "InterfaceError", "DisconnectionError", "TimeoutError", "PoolTimeout"}
)

# An absolute path of two or more parts: not inside a URL or a relative path (the character
# before it is none of those a URL or a path has before a slash).
_PATH = re.compile(r"(?<![\w.~:/\\-])(?:/[^\s/'\"`()<>\[\]{},;:=|]+){2,}/?")


def _driver_classes(exc: BaseException) -> list[str]:
    return [c.__name__ for c in type(exc).__mro__ if c.__module__.split(".")[0] in _DRIVERS]


def is_driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a database driver's (or SQLAlchemy's) exception."""
    return bool(_driver_classes(exc))


def is_infrastructure(exc: BaseException) -> bool:
    """Whether ``exc``, or what it was raised from, is a database connection failing."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if _CONNECTION & set(_driver_classes(at)):
            return True
        at = at.__cause__ if at.__cause__ is not None or at.__suppress_context__ else at.__context__
    return False


def model_text(text: str, workdir: str | None = None) -> str:
    """``text`` without host paths: a path inside ``workdir`` (the tool's own directory)
    becomes relative to it, any other absolute path ``<path>``."""
    root = workdir.rstrip("/") if workdir and workdir.startswith("/") else None

    def one(found: re.Match[str]) -> str:
        path = found.group(0)
        if root and (path == root or path.startswith(root + "/")):
            return path[len(root) + 1 :] or "."
        return "<path>"

    return _PATH.sub(one, text)


def exception_text(exc: BaseException, workdir: str | None = None) -> str:
    """What a model reads of a tool's exception: its class and message, without host paths;
    of a database driver's, its first line only (the statement, its parameters and the
    driver's links stay in the worker's log), and nothing of the message when the
    connection failed (it names the server's host or socket)."""
    name = type(exc).__name__
    message = str(exc)
    if is_driver_error(exc):
        if is_infrastructure(exc):
            return f"{name}: the database connection failed (the worker's log has the details)"
        message = message.strip().splitlines()[0] if message.strip() else ""
    return model_text(f"{name}: {message}" if message else name, workdir)
