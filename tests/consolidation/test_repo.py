"""Exact-span commits, races between consolidations, and idempotent memory writes, on
real Postgres."""

from __future__ import annotations

import threading
from datetime import timedelta

from tests.consolidation.helpers import T0
from wakeful.agents import Agent
from wakeful.substrate.records import ConsolidationLogRecord, EventIn, MemoryRecord, SummaryRecord
from wakeful.substrate.store import TenantStore


def seed(ts: TenantStore, n: int, prefix: str = "e") -> list[int]:
    events = [
        EventIn(
            step_key=f"{prefix}{i}",
            kind="turn",
            role="user",
            text=f"turn {i}",
            event_time=T0 + timedelta(minutes=i),
        )
        for i in range(n)
    ]
    return [e.id for e in ts.append_events("ops", events)]


def summary(key: str, ids: list[int], level: int = 1) -> SummaryRecord:
    return SummaryRecord(
        agent="ops",
        step_key=key,
        level=level,
        span_start=min(ids),
        span_end=max(ids),
        text=f"summary {key}",
    )


def test_a_summary_retires_exactly_its_events(tenant: TenantStore, ops: Agent) -> None:
    ids = seed(tenant, 5)
    chosen = [ids[0], ids[1], ids[3]]  # ids[2] arrived late, inside the range, unread
    saved, status = tenant.commit_summary(summary("k1", chosen), at=T0, event_ids=chosen)
    assert status == "accepted" and saved is not None
    retired = {e.id: e.retired_at for e in tenant.events("ops")}
    assert [i for i in ids if retired[i] is not None] == chosen
    again, status = tenant.commit_summary(summary("k1", chosen), at=T0, event_ids=chosen)
    assert status == "exists" and again is not None and again.id == saved.id
    assert len(tenant.summaries("ops")) == 1


def test_an_overlapping_span_loses_the_race_and_writes_nothing(
    tenant: TenantStore, ops: Agent
) -> None:
    ids = seed(tenant, 6)
    tenant.commit_summary(summary("a", ids[:4]), at=T0, event_ids=ids[:4])
    lost, status = tenant.commit_summary(summary("b", ids[2:]), at=T0, event_ids=ids[2:])
    assert lost is None and status.startswith("raced:")
    assert len(tenant.summaries("ops")) == 1
    assert [e.id for e in tenant.events("ops", include_retired=False)] == ids[4:]


def test_concurrent_commits_write_one_summary_per_event(tenant: TenantStore, ops: Agent) -> None:
    ids = seed(tenant, 12)
    spans = [ids[0:6], ids[3:9], ids[0:6], ids[6:12], ids[5:12]]
    results: list[str] = []
    barrier = threading.Barrier(len(spans))

    def commit(span: list[int]) -> None:
        barrier.wait()
        key = f"span:{span[0]}-{span[-1]}"
        results.append(tenant.commit_summary(summary(key, span), at=T0, event_ids=span)[1])

    threads = [threading.Thread(target=commit, args=(s,)) for s in spans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    live = tenant.summaries("ops")
    covered = [i for s in live for i in ids if s.span_start <= i <= s.span_end]
    assert len(covered) == len(set(covered))  # no event under two summaries
    assert results.count("accepted") == len(live) and len(results) == len(spans)
    assert set(results) <= {"accepted", "exists"} | {r for r in results if r.startswith("raced")}
    retired = [e.id for e in tenant.events("ops") if e.retired_at is not None]
    assert sorted(retired) == sorted(covered)  # every retired event is in exactly one summary


def test_rollups_supersede_their_children_once(tenant: TenantStore, ops: Agent) -> None:
    ids = seed(tenant, 6)
    a, _ = tenant.commit_summary(summary("a", ids[:3]), at=T0, event_ids=ids[:3])
    b, _ = tenant.commit_summary(summary("b", ids[3:]), at=T0, event_ids=ids[3:])
    assert a is not None and b is not None and a.id is not None and b.id is not None
    up, status = tenant.commit_summary(summary("up", ids, level=2), at=T0, child_ids=[a.id, b.id])
    assert status == "accepted" and up is not None
    assert [s.id for s in tenant.summaries("ops")] == [up.id]
    assert (
        tenant.commit_summary(summary("up", ids, level=2), at=T0, child_ids=[a.id, b.id])[1]
        == "exists"
    )
    other, status = tenant.commit_summary(summary("up2", ids, level=2), at=T0, child_ids=[a.id])
    assert other is None and status.startswith("raced:")


def test_a_retried_memory_write_does_not_retire_the_newer_memory(
    tenant: TenantStore, ops: Agent
) -> None:
    def mem(key: str, text: str, minutes: int) -> MemoryRecord:
        return MemoryRecord(
            agent="ops",
            step_key=key,
            key="port",
            text=text,
            source="test",
            captured_at=T0 + timedelta(minutes=minutes),
        )

    tenant.remember(mem("m1", "the port is 5433", 1))
    tenant.remember(mem("m2", "the port is 6543", 2))
    tenant.remember(mem("m1", "the port is 5433", 1))  # an activity retry
    assert [m.text for m in tenant.memories("ops")] == ["the port is 6543"]


def test_the_log_is_idempotent(tenant: TenantStore, ops: Agent) -> None:
    rec = ConsolidationLogRecord(
        agent="ops",
        step_key="r1:gate:x",
        round_id="r1",
        action="summary",
        status="rejected",
        subject="x",
        detail={"reasons": ["numerals: missing 3"]},
    )
    first = tenant.log_consolidation(rec)
    again = tenant.log_consolidation(rec.model_copy(update={"status": "accepted"}))
    assert again.id == first.id and again.status == "rejected"
    assert tenant.logged("r1:gate:x") == first
    assert [e.subject for e in tenant.consolidation_log("ops")] == ["x"]
