"""A skill loaded in one user's wake stays that user's: another user's wake in the same
session does not get its body, the agent's own wakes neither."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.substrate.events import tool_event
from wakeful.substrate.sources import SourceContext, loaded_skills
from wakeful.substrate.store import TenantStore

AGENT = "helpdesk"
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _load(step: str, skill: str, user: str | None, minutes: int) -> object:
    return tool_event(
        "tool_result",
        step,
        f"{skill} skill body",
        call_id=f"call-{step}",
        tool="load_skill",
        at=NOW + timedelta(minutes=minutes),
        session_id="s-1",
        wake_id=f"w-{step}",
        meta={"skill": skill},
        user_id=user,
    )


def _loaded_for(ts: TenantStore, user: str | None, upto: int) -> set[str]:
    spec = {"user": user} if user is not None else {}
    ctx = SourceContext(
        store=ts,
        agent=AGENT,
        spec=spec,
        max_event_id=upto,
        as_of=NOW + timedelta(hours=1),
        current_wake_id="w-now",
        session_id="s-1",
    )
    return set(loaded_skills(ctx))


def test_a_skill_one_user_loaded_reaches_neither_another_user_nor_the_agent(
    tenant: TenantStore,
) -> None:
    tenant.upsert_agent(AGENT, model="m", provider="anthropic", instructions="i", spec={})
    stored = tenant.append_events(
        AGENT,
        [
            _load("agent", "refunds", None, 1),  # an agent-wide load: every wake's
            _load("alice", "medical-history", "alice", 2),
        ],
    )
    upto = max(e.id for e in stored)
    assert _loaded_for(tenant, "alice", upto) == {"refunds", "medical-history"}
    assert _loaded_for(tenant, "bob", upto) == {"refunds"}
    assert _loaded_for(tenant, None, upto) == {"refunds"}
