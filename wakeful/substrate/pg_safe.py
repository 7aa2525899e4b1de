"""Text and JSON that Postgres accepts, whatever reaches the store.

Postgres refuses two things a Python ``str`` can hold: NUL (``text`` and ``jsonb`` cannot
store it; ``\\u0000`` is refused in ``jsonb`` too) and lone surrogates (psycopg cannot encode
them as UTF-8; ``jsonb`` refuses their escapes). They arrive from the world — a webhook's
text, a CLI message, a tool reading a binary file, a model's reply — and a write that fails
on them fails the same way on every retry, stalling the agent behind it.

So the store replaces each of them with U+FFFD (the Unicode replacement character) before
anything is written, in one place: :func:`install` hooks every statement an engine runs and
cleans its string and JSON parameters; the repositories that hash content before writing it
(blobs, events) or send JSON as text clean it first with :func:`pg_text` / :func:`pg_json`, so
the hash is that of what is stored. Replacement is deterministic: a retry writes the same row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg.types.json import Json, Jsonb
from sqlalchemy import Engine, event

__all__ = ["REPLACEMENT", "install", "pg_json", "pg_text"]

REPLACEMENT = "\ufffd"
# NUL, and any surrogate code point: in a Python str (decoded JSON included) a surrogate is
# always unpaired, since a valid pair is decoded to the one character it encodes.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def pg_text(value: str) -> str:
    """``value`` with NUL and lone surrogates replaced by U+FFFD (the same object if none)."""
    if value.isascii():  # the common case, checked at memory speed
        return value.replace("\x00", REPLACEMENT) if "\x00" in value else value
    return _UNSTORABLE.sub(REPLACEMENT, value) if _UNSTORABLE.search(value) else value


def pg_json(value: Any) -> Any:
    """A JSON-like value with every string (keys included) passed through :func:`pg_text`.

    Containers are copied only where something changed, so a clean value comes back as the
    same object at no cost beyond the walk.
    """
    if isinstance(value, str):
        return pg_text(value)
    if isinstance(value, Mapping):
        items = [(pg_json(k), pg_json(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [pg_json(v) for v in value]
        if all(c is v for c, v in zip(cleaned, value, strict=True)):
            return value
        return type(value)(cleaned) if isinstance(value, tuple) else cleaned
    return value


def _param(value: Any) -> Any:
    if isinstance(value, str):
        return pg_text(value)
    if isinstance(value, Json | Jsonb):  # a JSON column's value, not serialised yet
        cleaned = pg_json(value.obj)
        return value if cleaned is value.obj else type(value)(cleaned, value.dumps)
    if isinstance(value, list | tuple):  # arrays (``unnest`` appends)
        return pg_json(value)
    if isinstance(value, dict):
        return pg_json(value)
    return value


def _params(parameters: Any) -> Any:
    if isinstance(parameters, Mapping):
        return {k: _param(v) for k, v in parameters.items()}
    if isinstance(parameters, Sequence) and not isinstance(parameters, str | bytes):
        if parameters and isinstance(parameters[0], Mapping | list | tuple):  # executemany
            return type(parameters)(_params(p) for p in parameters)  # type: ignore[call-arg]
        return type(parameters)(_param(v) for v in parameters)  # type: ignore[call-arg]
    return parameters


def _before_execute(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
) -> tuple[str, Any]:
    return statement, _params(parameters)


def install(engine: Engine) -> None:
    """Clean every parameter ``engine`` sends from now on (idempotent)."""
    if not event.contains(engine, "before_cursor_execute", _before_execute):
        event.listen(engine, "before_cursor_execute", _before_execute, retval=True)
