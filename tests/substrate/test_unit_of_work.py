"""A unit of work: its repositories share one transaction, committed or rolled back whole;
a store made ``within`` a unit runs its calls in it, a ``standalone`` one each in its own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wakeful.substrate.records import EventIn
from wakeful.substrate.store import TenantStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
AGENT = "a1"


def _turn(key: str) -> EventIn:
    return EventIn(step_key=key, kind="turn", role="user", text=key, session_id="s1", event_time=T0)


class _Abort(Exception):
    pass


def _agent(ts: TenantStore) -> None:
    ts.upsert_agent(AGENT, model="m", provider="anthropic", instructions="", spec={})


def test_a_units_writes_commit_together_or_not_at_all(tenant: TenantStore) -> None:
    _agent(tenant)
    with pytest.raises(_Abort), tenant.unit() as uow:
        uow.events.append_events(AGENT, [_turn("lost")])
        digest = uow.blobs.put_blob("note", "lost too")
        raise _Abort
    assert tenant.count_events(AGENT) == 0
    assert tenant.event_by_step("lost") is None
    with tenant.unit() as uow:
        uow.events.append_events(AGENT, [_turn("kept")])
        assert uow.blobs.put_blob("note", "lost too") == digest
    assert [e.text for e in tenant.events(AGENT)] == ["kept"]
    assert tenant.get_blob(digest) == "lost too"


def test_a_store_within_a_unit_runs_in_it_and_a_standalone_one_does_not(
    tenant: TenantStore,
) -> None:
    _agent(tenant)
    with tenant.unit() as uow:
        uow.events.append_events(AGENT, [_turn("pending")])
        here = tenant.within(uow)
        assert here.bound is uow
        with here.unit() as joined:  # joins: the same unit, the same connection
            assert joined is uow
        assert here.count_events(AGENT) == 1  # sees the unit's uncommitted write
        assert here.standalone().count_events(AGENT) == 0  # another transaction does not
        assert tenant.count_events(AGENT) == 0
    assert tenant.count_events(AGENT) == 1
