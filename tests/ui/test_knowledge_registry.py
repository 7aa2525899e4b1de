"""The knowledge page over the registry written by key: a retired decision is not live,
nor is a proposal."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from fastapi.testclient import TestClient

from tests.ui.test_app import LOCAL, get
from tests.ui.test_session_knowledge import body_rows, cells
from wakeful.substrate.store import Store
from wakeful.ui.app import create_app
from wakeful.ui.html import url


def test_a_retired_decision_is_shown_retired_and_not_counted_live(store: Store) -> None:
    ts = store.tenant(f"ui-r-{uuid.uuid4().hex[:8]}")
    ts.upsert_agent("keeper", model="m", provider="simulator", instructions="", spec={})
    now = datetime.now(UTC)
    ts.record_decision("keeper", key="db.engine", text="Use PG 16.")
    ts.record_decision("keeper", key="freeze", text="Freeze merges.")
    ts.retire_decision("keeper", "P-2", at=now, by="person")
    ts.record_decision(
        "keeper", key="db.engine", text="Use PG 17.", source="tool", decision_id="DEC-9"
    )
    with TestClient(create_app(ts), base_url=LOCAL) as client:
        doc = get(client, url("knowledge", "keeper"))
    decisions = {cells(r)[0]: cells(r) for r in body_rows(doc, "decisions")}
    assert decisions["P-1"][5] == "live"
    assert decisions["P-2"][5] == "retired by person"
    assert decisions["DEC-9"][5] == "proposed over P-1"  # the model's, on a person's key
    cards = {c.one("span").text(): c.one("b").text() for c in doc.all("div", class_="card")}
    assert cards["decisions live"] == "1"
