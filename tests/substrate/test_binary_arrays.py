"""Lists reach Postgres as binary arrays (``wakeful.substrate.binary_arrays``), and what they
carry is stored exactly as it was: quotes, backslashes, braces, commas, the word NULL, empty
strings and ``None`` included, in blobs and in a batch of events."""

from __future__ import annotations

from datetime import UTC, datetime

from psycopg.adapt import PyFormat
from psycopg.types.array import ListBinaryDumper
from sqlalchemy import text

from wakeful.substrate.records import EventIn
from wakeful.substrate.store import Store, TenantStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

# Every character a text array literal quotes or escapes, and the values it spells specially.
AWKWARD = [
    '{"a": "b\\"c", "d": [1, 2]}',
    "back\\slash \\\\ and \\",
    "braces {}, commas , and spaces",
    "NULL",
    "null",
    "",
    " leading and trailing ",
    "\u3000ideographic space\u2028",
    "tab\tnewline\n",
]


def test_a_store_connection_dumps_lists_in_binary(store: Store) -> None:
    with store.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        assert raw.adapters.get_dumper(list, PyFormat.AUTO) is ListBinaryDumper
        # Typed on the wire: a text array, where the text literal would be of unknown type.
        sent = conn.execute(text("SELECT pg_typeof(:xs)::text"), {"xs": ["a", "b"]}).scalar()
    assert sent == "text[]"


def test_lists_with_nothing_to_type_still_travel(store: Store) -> None:
    with store.engine.connect() as conn:
        for xs in ([], [None, None]):
            got = conn.execute(text("SELECT CAST(:xs AS text[])"), {"xs": xs}).scalar()
            assert got == xs


def test_blobs_with_awkward_text_come_back_as_stored(tenant: TenantStore) -> None:
    digests = tenant.put_blobs([("text", s) for s in AWKWARD])
    assert [tenant.get_blob(d) for d in digests] == AWKWARD


def test_a_batch_of_events_with_awkward_text_comes_back_as_appended(tenant: TenantStore) -> None:
    tenant.upsert_agent("a1", model="m", provider="anthropic", instructions="be brief", spec={})
    items = [
        EventIn(
            step_key=f"k{n}",
            kind="turn",
            role="user",
            text=s,
            session_id="s1",
            event_time=T0,
            meta={"note": s} if n % 2 else {},
            tool_input=None,
        )
        for n, s in enumerate(AWKWARD)
    ]
    stored = tenant.append_events("a1", items)
    assert [e.text for e in stored] == AWKWARD
    assert [e.meta for e in stored] == [e.meta for e in items]
    assert [e.role for e in stored] == ["user"] * len(AWKWARD)
    assert all(e.session_id == "s1" and e.user_id is None for e in stored)
