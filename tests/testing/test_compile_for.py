"""``compile_for``: the window an agent's policy compiles from a small history, offline, and
the same bytes from the same history in Postgres."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, make_url
from sqlalchemy import text as sql

from tests.substrate.events import tool_event, turn_event
from wakeful.agents import Agent
from wakeful.errors import UserError
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    SummaryRecord,
)
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing import MemoryStore, compile_for

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def deploy_status(service: str) -> str:
    """The last deploy of ``service``."""
    return f"{service}: failed at migrate"


AGENT = Agent(name="triage", instructions="Find why deploys fail.", tools=(deploy_status,))


def _history(store: MemoryStore | TenantStore) -> None:
    """A session that read a deploy's status, was consolidated and handed off, with a
    decision and a memory."""
    s1 = {"session_id": "s1", "wake_id": "w1"}
    events = store.append_events(
        "triage",
        [
            turn_event("w1:ask", "billing deploy failed", at=T0, **s1),
            tool_event(
                "tool_call",
                "w1:call",
                '{"service":"billing"}',
                call_id="c1",
                tool="deploy_status",
                at=T0,
                tool_input={"service": "billing"},
                role="assistant",
                meta={"reply": "0"},
                **s1,
            ),
            tool_event(
                "tool_result",
                "w1:result",
                "billing: failed at migrate",
                call_id="c1",
                tool="deploy_status",
                at=T0,
                **s1,
            ),
            turn_event(
                "w1:say",
                "It failed at the migrate step.",
                at=T0,
                role="assistant",
                meta={"reply": "1"},
                **s1,
            ),
        ],
    )
    first, last = events[0].id, events[-1].id
    store.add_summary(
        SummaryRecord(
            agent="triage",
            step_key="sum-1",
            level=1,
            span_start=first,
            span_end=first,
            text="The user reported a failed billing deploy.",
        ),
        retire_span=True,
        at=T0 + timedelta(minutes=5),
    )
    store.register_decision(
        DecisionRecord(
            decision_id="D1", agent="triage", text="Roll back before retrying.", source_event=last
        )
    )
    store.remember(
        MemoryRecord(
            agent="triage",
            step_key="m1",
            key="billing.db",
            text="billing runs Postgres 16",
            source="events:1",
            captured_at=T0,
        )
    )
    body = HandoffBody(
        goal="billing deploy",
        current_state="failed at migrate",
        decisions=["D1"],
        next_actions=["check the migration"],
    )
    store.write_handoff(
        HandoffRecord(
            agent="triage", session_id="s1", wake_id="w1", step_key="w1:handoff", body=body
        )
    )


NOW = T0 + timedelta(hours=1)


def test_the_window_holds_the_history_the_substrate_gives() -> None:
    store = MemoryStore()
    _history(store)
    window = compile_for(AGENT, store, "billing again?", now=NOW, session_id="s2", wake_id="w2")
    included = {
        row.block_id.split(":")[0] for row in window.ledger.rows if row.status == "included"
    }
    assert {"tool", "decision", "handoff", "summary", "memory", "ev"} <= included
    for text in (
        "Find why deploys fail.",  # the instructions
        "[D1] Roll back before retrying.",  # the registry
        "check the migration",  # the handoff note of the session before
        "The user reported a failed billing deploy.",  # the summary
        "billing runs Postgres 16",  # the memory
        "billing again?",  # the ask
    ):
        assert text in window.request_json, text
    assert "billing deploy failed" not in window.request_json  # retired, and another session's
    assert window.request["tools"][0]["name"] == "deploy_status"
    # Asking the same wake again compiles the same window; asking it something else is refused.
    again = compile_for(AGENT, store, "billing again?", now=NOW, session_id="s2", wake_id="w2")
    assert again.request_json == window.request_json
    with pytest.raises(UserError, match=r"wake 'w2' of agent 'triage' was asked .* already"):
        compile_for(AGENT, store, "something else", now=NOW, session_id="s2", wake_id="w2")


@pytest.fixture
def fresh_tenant(pg_url: str) -> Iterator[TenantStore]:
    """A tenant in a database of its own: its ids start at 1, as a new MemoryStore's do
    (the window names summaries, notes and memories by id)."""
    name = f"compile_for_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sql(f'CREATE DATABASE "{name}"'))
    store = Store.connect(make_url(pg_url).set(database=name).render_as_string(hide_password=False))
    try:
        yield store.tenant("t1")
    finally:
        store.close()
        with admin.connect() as conn:
            conn.execute(sql(f'DROP DATABASE "{name}"'))
        admin.dispose()


def test_a_memory_store_compiles_the_bytes_postgres_does(fresh_tenant: TenantStore) -> None:
    tenant = fresh_tenant
    tenant.upsert_agent("triage", model="m", provider="anthropic", instructions="", spec={})
    windows = []
    for store in (tenant, MemoryStore(tenant.name)):
        _history(store)
        windows.append(
            compile_for(AGENT, store, "billing again?", now=NOW, session_id="s2", wake_id="w2")
        )
    postgres, memory = windows
    assert memory.request_json == postgres.request_json
    assert memory.input_tokens == postgres.input_tokens
