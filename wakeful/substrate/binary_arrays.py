"""Lists travel to Postgres as binary arrays.

psycopg sends a Python list as a text array literal by default: every element is searched
for characters to quote, and each double quote or backslash in it is escaped by a regular
expression substitution that calls back into Python once per match. The substrate sends
JSON and whole windows in arrays (a batch of events, blob rows unnested server-side), so a
wake's writes escaped thousands of quotes, a few milliseconds of the worker's CPU per wake.
In binary each element is sent as its bytes with a length: nothing to escape.

Every array the substrate sends has its type said in the statement (``CAST(:x AS
text[])``, a bind of type ``ARRAY(...)``) or meets a column of the element's type, so the
typed binary array means what the untyped text literal meant. A list with no element to
type (empty, or all ``None``) still goes as text: psycopg's binary dumper hands it back.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.array import ListBinaryDumper
from sqlalchemy import Engine, event

__all__ = ["install"]


def _binary_lists(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.adapters.register_dumper(list, ListBinaryDumper)


def install(engine: Engine) -> None:
    """Send lists as binary arrays on every connection ``engine`` opens from now on
    (idempotent)."""
    if not event.contains(engine, "connect", _binary_lists):
        event.listen(engine, "connect", _binary_lists)
