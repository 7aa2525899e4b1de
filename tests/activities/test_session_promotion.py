"""Promotion at a session's end, against a real Postgres: only the ending session's turns,
consolidation's ids, once however often the activity runs, and revocations applied."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wakeful.activities.promotion import promote_session
from wakeful.substrate.records import EventIn
from wakeful.substrate.store import TenantStore

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _say(ts: TenantStore, session: str, *texts: str) -> list[int]:
    ts.upsert_agent("ops", model="m", provider="anthropic", instructions="x", spec={})
    events = [
        EventIn(
            step_key=f"{session}:{n}",
            kind="turn",
            role="user",
            text=text,
            session_id=session,
            event_time=T0 + timedelta(minutes=n),
        )
        for n, text in enumerate(texts)
    ]
    return [e.id for e in ts.append_events("ops", events)]


def test_the_ending_sessions_rules_are_promoted_once(tenant: TenantStore) -> None:
    (other,) = _say(tenant, "ops:s1", "Always tag releases.")
    rule, _ = _say(tenant, "ops:s2", "Never force-push to main.", "How is the build?")
    assert promote_session(tenant, "ops", "ops:s2") == ([f"LB-{rule}"], [])
    revision = tenant.knowledge_revision("ops")
    assert promote_session(tenant, "ops", "ops:s2") == ([], [])  # a retried session end
    assert tenant.knowledge_revision("ops") == revision  # wrote nothing
    ((d),) = tenant.all_decisions("ops")
    assert (d.decision_id, d.source, d.expires_at) == (f"LB-{rule}", "consolidation", None)
    assert f"LB-{other}" not in {x.decision_id for x in tenant.all_decisions("ops")}


def test_a_revocation_in_the_session_retires_what_it_names(tenant: TenantStore) -> None:
    (rule,) = _say(tenant, "ops:s1", "Never deploy on Fridays.")
    promote_session(tenant, "ops", "ops:s1")
    (lift,) = _say(tenant, "ops:s2", f"LB-{rule} no longer applies.")
    assert promote_session(tenant, "ops", "ops:s2") == ([], [f"LB-{rule}"])
    assert tenant.decision("ops", f"LB-{rule}").superseded_by == f"revoked@events:{lift}"
    assert tenant.live_decisions("ops", datetime.now(UTC) + timedelta(hours=1)) == []
