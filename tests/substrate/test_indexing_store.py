"""Repository paths the index and the snapshot lean on: bulk append, tails, cursors, one tx."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import event

from wakeful.substrate.records import EventIn
from wakeful.substrate.sources import load_blocks
from wakeful.substrate.store import Store, TenantStore

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)


def ev(key: str, session: str | None = "s1", **kw: object) -> EventIn:
    fields: dict[str, object] = {"kind": "turn", "role": "user", "text": f"text {key}"}
    fields.update(kw)
    return EventIn(step_key=key, session_id=session, event_time=T0, **fields)  # type: ignore[arg-type]


def test_bulk_append_keeps_order_fields_and_idempotency(tenant: TenantStore) -> None:
    tenant.upsert_agent("a", model="m", provider="anthropic", instructions="i", spec={})
    items = [ev(f"k{n}") for n in range(2500)]
    items.insert(
        7,
        ev(
            "tool",
            kind="tool_call",
            role="assistant",
            text="{}",
            tool_call_id="c1",
            tool_name="grep",
            tool_input={"q": "disk", "n": [1, 2]},
            meta={"why": "a 'quoted' {brace}"},
            is_error=True,
            external_id="D1:2",
        ),
    )
    stored = tenant.append_events("a", items)
    assert [e.step_key for e in stored] == [e.step_key for e in items]
    assert [e.id for e in stored] == sorted(e.id for e in stored)  # append order = id order
    tool = stored[7]
    assert tool.tool_input == {"q": "disk", "n": [1, 2]}
    assert tool.meta == {"why": "a 'quoted' {brace}"} and tool.is_error
    assert (tool.external_id, tool.session_id, tool.event_time) == ("D1:2", "s1", T0)
    # A retry (some old, some new) returns the first writes and appends only the new.
    again = tenant.append_events("a", [items[0], ev("new"), items[7]])
    assert [e.id for e in again][0::2] == [stored[0].id, stored[7].id]
    assert tenant.count_events("a") == len(items) + 1
    assert tenant.events("a", max_id=stored[7].id)[-1] == tool


def test_recent_events_filters_the_session_after_the_limit(tenant: TenantStore) -> None:
    tenant.upsert_agent("a", model="m", provider="anthropic", instructions="i", spec={})
    stored = tenant.append_events(
        "a", [ev(f"k{n}", session="old" if n < 5 or n == 8 else "new") for n in range(10)]
    )
    horizon = stored[-1].id
    tail = tenant.recent_events("a", max_id=horizon, limit=4, session_id="new")
    # The newest four are k6..k9; k8 belongs to another session.
    assert [e.step_key for e in tail] == ["k6", "k7", "k9"]
    assert [e.step_key for e in tenant.recent_events("a", max_id=stored[6].id, limit=2)] == [
        "k5",
        "k6",
    ]


def test_index_cursor_only_moves_forward_until_reset(tenant: TenantStore) -> None:
    assert tenant.index_cursor("a", "c") == 0
    tenant.set_index_cursor("a", "c", 10)
    tenant.set_index_cursor("a", "c", 4)
    assert tenant.index_cursor("a", "c") == 10
    assert tenant.index_cursor("a", "other") == 0
    tenant.reset_index_cursor("a", "c")
    assert tenant.index_cursor("a", "c") == 0


def test_a_snapshot_reads_in_one_transaction(store: Store, tenant: TenantStore) -> None:
    tenant.upsert_agent("a", model="m", provider="anthropic", instructions="i", spec={})
    stored = tenant.append_events("a", [ev(f"k{n}", wake_id="w1") for n in range(3)])
    begins: list[object] = []

    def began(conn: object) -> None:
        begins.append(conn)

    event.listen(store.engine, "begin", began)
    try:
        blocks = load_blocks(
            tenant, "a", max_event_id=stored[-1].id, as_of=T0 + timedelta(1), current_wake_id="w1"
        )
    finally:
        event.remove(store.engine, "begin", began)
    assert [b.id for b in blocks] == [f"ev:{e.id}" for e in stored]
    assert len(begins) == 1
