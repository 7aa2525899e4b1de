"""Snapshot tails kept between compiles answer exactly what the store answers.

Each case reads the tail through the cache and straight from the store, over a session that
grows, crosses page boundaries, has events retired by a summary, and gets an event with a
lower id committed late; the two must agree every time, and the cache must have read only
the new events where it could.
"""

from __future__ import annotations

from tests.activities.test_model_activity import statements
from tests.substrate.summaries import retire_span
from tests.substrate.test_store import T0, _agent, _turn
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.sources import load_blocks
from wakeful.substrate.store import TenantStore
from wakeful.substrate.tail_cache import TailCache

LIMIT, PAGE = 5, 3


def _both(
    cache: TailCache, ts: TenantStore, agent: str, session: str = "s1", *, horizon: bool = False
) -> tuple[list[StoredEvent], list[StoredEvent]]:
    """Through the cache and straight from the store; with ``horizon``, the revision, the
    event horizon and the last retirement read in one statement, as a compile reads them."""
    max_id = ts.max_event_id(agent)
    revision = ts.knowledge_revision(agent)
    last_retired = None
    if horizon:
        revision, max_id, last_retired, _ = ts.snapshot_horizon(agent)
    kept, _ = cache.read(
        ts,
        agent,
        max_id=max_id,
        limit=LIMIT,
        session_id=session,
        page=PAGE,
        revision=revision,
        last_retired=last_retired,
    )
    fresh = ts.recent_events(agent, max_id=max_id, limit=LIMIT, session_id=session, page=PAGE)
    return kept, fresh


def _append(ts: TenantStore, agent: str, keys: range, session: str = "s1") -> None:
    ts.append_events(agent, [_turn(f"{session}-{i}", f"turn {i}", session=session) for i in keys])


def test_a_growing_session_reads_only_what_was_appended(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache()
    for step in range(12):  # 2 events a step: the tail's start moves across page boundaries
        _append(tenant, agent, range(2 * step, 2 * step + 2))
        _append(tenant, agent, range(step, step + 1), session="other")
        kept, fresh = _both(cache, tenant, agent)
        assert kept == fresh
        assert LIMIT <= len(kept) <= LIMIT + PAGE - 1 or len(kept) == 2 * step + 2
    assert (cache.hits, cache.misses) == (11, 1)


def test_a_retirement_after_the_read_makes_the_cache_read_again(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache()
    _append(tenant, agent, range(6))
    kept, _ = _both(cache, tenant, agent)
    retire_span(tenant, agent, (kept[0].id, kept[1].id), "two turns", at=T0)
    kept, fresh = _both(cache, tenant, agent)
    assert kept == fresh and kept[0].retired_by is not None
    assert (cache.hits, cache.misses) == (0, 2)
    _append(tenant, agent, range(6, 8))  # retired before this read: extended again
    assert _both(cache, tenant, agent)[0] == _both(TailCache(), tenant, agent)[1]
    assert cache.hits == 1


def test_the_last_retirement_read_with_the_horizon_serves_as_the_caches_own_lookup(
    tenant: TenantStore,
) -> None:
    """The same answers, hits and misses when the caller read the last retirement with the
    revision (a compile's snapshot does), and the cache sends no lookup of its own."""
    agent = _agent(tenant)
    cache = TailCache()
    _append(tenant, agent, range(6))
    kept, _ = _both(cache, tenant, agent, horizon=True)
    retire_span(tenant, agent, (kept[0].id, kept[1].id), "two turns", at=T0)
    kept, fresh = _both(cache, tenant, agent, horizon=True)
    assert kept == fresh and kept[0].retired_by is not None
    assert (cache.hits, cache.misses) == (0, 2)
    _append(tenant, agent, range(6, 8))  # retired before this read: extended again
    revision, max_id, last_retired, _ = tenant.snapshot_horizon(agent)
    with statements(tenant) as sent:
        kept, _ = cache.read(
            tenant,
            agent,
            max_id=max_id,
            limit=LIMIT,
            session_id="s1",
            page=PAGE,
            revision=revision,
            last_retired=last_retired,
        )
    fresh = tenant.recent_events(agent, max_id=max_id, limit=LIMIT, session_id="s1", page=PAGE)
    assert kept == fresh and cache.hits == 1
    # One statement: the events appended since and the session's count, together.
    assert len(sent) == 1 and "count(*)" in sent[0], sent


def test_an_event_committed_late_with_a_lower_id_is_not_missed(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache()
    _append(tenant, agent, range(4))
    # An event of the session whose id is below what the cache has read: as if its
    # transaction took its id first and committed after the cache's read.
    late = tenant.append_events(agent, [_turn("late", "late turn", session="elsewhere")])[0]
    _append(tenant, agent, range(4, 6))
    _both(cache, tenant, agent)
    with tenant.unit() as uow:
        uow.conn.exec_driver_sql(
            "UPDATE events SET session_id = 's1' WHERE tenant = %(t)s AND id = %(id)s",
            {"t": tenant.name, "id": late.id},
        )
    _append(tenant, agent, range(6, 7))
    kept, fresh = _both(cache, tenant, agent)
    assert kept == fresh and late.id in {e.id for e in kept}
    assert cache.misses == 2


def test_the_cache_only_serves_reads_at_a_revision(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache()
    _append(tenant, agent, range(3))
    max_id = tenant.max_event_id(agent)
    args = {"max_id": max_id, "limit": LIMIT, "session_id": "s1", "page": PAGE}
    assert cache.read(tenant, agent, revision=None, **args)[0] == tenant.recent_events(
        agent, **args
    )
    assert (cache.hits, cache.misses) == (0, 0)


def test_entries_are_bounded_by_the_text_they_hold(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache(max_chars=40)
    for session in ("a", "b", "c"):
        _append(tenant, agent, range(2), session=session)  # 12 characters a session
        _both(cache, tenant, agent, session)
    assert cache.entries.size <= 40 and len(cache.entries) == 3
    _append(tenant, agent, range(2, 5), session="d")
    _both(cache, tenant, agent, "d")
    assert cache.entries.size <= 40 and len(cache.entries) == 2


def test_snapshots_through_the_cache_equal_snapshots_without(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    cache = TailCache()
    for step in range(5):
        _append(tenant, agent, range(3 * step, 3 * step + 3))
        revision = tenant.knowledge_revision(agent)
        args = {
            "max_event_id": tenant.max_event_id(agent),
            "as_of": T0,
            "current_wake_id": None,
            "session_id": "s1",
            "recent_limit": LIMIT,
            "recent_page": PAGE,
            "revision": revision,
        }
        assert load_blocks(tenant, agent, tail_cache=cache, **args) == load_blocks(
            tenant, agent, **args
        )
    assert cache.hits == 4
