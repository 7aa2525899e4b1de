"""The console's page of a running wake shows what its model call has streamed so far,
and reads itself again while the wake runs; a finished wake's page does neither."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient

from tests.e2e.harness import fresh_demo_agent
from tests.ui.dom import parse
from wakeful.substrate.records import WakeRecord
from wakeful.substrate.store import Store
from wakeful.ui.app import create_app
from wakeful.ui.html import url


def test_a_running_wakes_page_shows_the_streamed_text_until_the_wake_ends(
    store: Store, tmp_path: Path
) -> None:
    agent = fresh_demo_agent(tmp_path, store, "live")
    ts = store.tenant(agent.tenant)
    wake_id = f"{agent.name}:1"
    ts.start_wake(
        WakeRecord(
            wake_id=wake_id,
            agent=agent.name,
            session_id="s1",
            workflow_id=f"wakeful-agent:{agent.tenant}:{agent.name}",
            number=1,
            goal={"kind": "message", "text": "How is billing?"},
            started_at=datetime(2026, 3, 1, tzinfo=UTC),
        )
    )
    with ts.unit() as uow:
        uow.stream.publish_stream(agent.name, wake_id, 0, [("text", {"text": "Billing is "})])
        uow.stream.publish_stream(agent.name, wake_id, 0, [("text", {"text": "recovering"})])
    with TestClient(create_app(ts), base_url="http://127.0.0.1") as client:
        running = client.get(url("wakes", wake_id)).text
        assert parse(running).one(id="live").text() == "Billing is recovering"
        assert "location.reload()" in running
        ts.finish_wake(wake_id, "done", datetime(2026, 3, 1, 0, 1, tzinfo=UTC))
        done = client.get(url("wakes", wake_id)).text
    assert parse(done).all(id="live") == [] and "location.reload()" not in done
