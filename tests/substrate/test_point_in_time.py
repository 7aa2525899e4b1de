"""Bi-temporal knowledge: valid time for memories, knowledge revisions for everything.

A snapshot read at a knowledge revision is the same snapshot after consolidation and later
wakes have superseded, retired, marked and added knowledge; reading at the newest revision
shows the changes. Memories supersede by valid time, whatever order they arrive in.
"""

from __future__ import annotations

from datetime import timedelta

from tests.substrate.summaries import retire_span
from tests.substrate.test_store import T0, _agent, _turn
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
)
from wakeful.substrate.sources import load_blocks
from wakeful.substrate.store import TenantStore


def _memory(agent: str, key: str, text: str, hours: float, step: str) -> MemoryRecord:
    return MemoryRecord(
        agent=agent,
        step_key=step,
        key=key,
        text=text,
        source="test",
        captured_at=T0 + timedelta(hours=hours),
    )


def test_a_late_older_memory_does_not_supersede_a_newer_one(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    tenant.remember(_memory(agent, "db", "Postgres 18", 2, "new"))
    late = tenant.remember(_memory(agent, "db", "Postgres 15", 1, "old"))  # arrives second
    assert late.invalidated_at == T0 + timedelta(hours=2)  # stored already superseded
    assert [m.text for m in tenant.memories(agent)] == ["Postgres 18"]
    at = {
        h: [m.text for m in tenant.memories(agent, at=T0 + timedelta(hours=h))]
        for h in (0.5, 1.5, 3)
    }
    assert at == {0.5: [], 1.5: ["Postgres 15"], 3: ["Postgres 18"]}
    # In order, the older one is cut at the newer one's capture: the same valid-time view.
    tenant.remember(_memory(agent, "os", "Debian 12", 1, "os-old"))
    tenant.remember(_memory(agent, "os", "Debian 13", 2, "os-new"))
    assert [m.text for m in tenant.memories(agent, at=T0 + timedelta(hours=1.5))] == [
        "Postgres 15",
        "Debian 12",
    ]


def _note(agent: str, session: str, goal: str, state: str) -> HandoffRecord:
    return HandoffRecord(
        agent=agent,
        session_id=session,
        wake_id=f"{session}:1",
        step_key=f"note-{session}",
        body=HandoffBody(goal=goal, current_state=state),
    )


def _snapshot(ts: TenantStore, agent: str, max_id: int, revision: int | None) -> list[str]:
    blocks = load_blocks(
        ts,
        agent,
        max_event_id=max_id,
        as_of=T0 + timedelta(days=1),
        current_wake_id=None,
        session_id="s1",
        revision=revision,
    )
    return [f"{b.id}|{b.text}|{b.meta}" for b in blocks]


def test_a_snapshot_at_a_revision_survives_consolidation(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    evs = tenant.append_events(agent, [_turn(f"k{i}", f"turn {i}") for i in range(4)])
    tenant.register_decision(DecisionRecord(decision_id="D-1", agent=agent, text="Use blue."))
    kept = tenant.remember(_memory(agent, "owner", "Dana owns checkout.", 1, "m-owner"))
    tenant.remember(_memory(agent, "db", "Postgres 15", 1, "m-db"))
    tenant.write_handoff(_note(agent, "s0", "first", "started"))
    revision = tenant.knowledge_revision(agent)
    max_id = evs[-1].id
    then = _snapshot(tenant, agent, max_id, revision)
    assert "decision:D-1|[D-1] Use blue.|{}" in then
    assert any("Dana owns checkout." in b and "unverified" in b for b in then)

    # Consolidation and later wakes move the knowledge on.
    tenant.supersede_decision(agent, "D-1", "D-2")
    tenant.register_decision(DecisionRecord(decision_id="D-2", agent=agent, text="Use green."))
    tenant.mark_memories(agent, [kept.id or 0], "stale")
    tenant.remember(_memory(agent, "db", "Postgres 18", 3, "m-db-new"))
    tenant.retire_memories(agent, [kept.id or 0], T0 + timedelta(hours=5))
    tenant.remember(_memory(agent, "tz", "Deploys are in UTC.", 0, "m-late"))  # captured before
    # Dated before the snapshot's clock: only the revision tells it was later.
    retire_span(tenant, agent, (evs[0].id, evs[1].id), "Two turns, summarised.", at=T0)
    tenant.write_handoff(_note(agent, "s2", "second", "moved on"))

    assert _snapshot(tenant, agent, max_id, revision) == then
    now = _snapshot(tenant, agent, max_id, tenant.knowledge_revision(agent))
    assert now != then
    joined = "\n".join(now)
    for changed in ("Use green.", "Postgres 18", "Deploys are in UTC.", "Two turns, summarised."):
        assert changed in joined
    for gone in ("Use blue.", "Dana owns checkout.", f"ev:{evs[0].id}|"):
        assert gone not in joined
    assert "moved on" in joined


def test_verification_marks_are_appended_not_overwritten(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    m = tenant.remember(_memory(agent, "owner", "Dana owns checkout.", 1, "m"))
    first = tenant.knowledge_revision(agent)
    tenant.mark_memories(agent, [m.id or 0], "stale")
    second = tenant.knowledge_revision(agent)
    tenant.mark_memories(agent, [m.id or 0], "verified")
    at = T0 + timedelta(days=1)
    seen = [
        tenant.memories(agent, at=at, revision=r)[0].verification for r in (first, second, None)
    ]
    assert seen == ["unverified", "stale", "verified"]
    assert tenant.memories(agent)[0].verification == "verified"
    assert tenant.memory_history(agent)[0].verification == "verified"
