"""``MemoryStore`` against the Postgres ``TenantStore``: one scenario of writes and reads run
on both, with equal results.

Ids come from sequences the whole test database shares, so each is compared as an offset
from the first of its kind the scenario wrote; ``created_at`` and ``ingest_time``, which
Postgres takes from its own clock, are left out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.substrate.events import tool_event, turn_event
from wakeful.substrate.records import (
    DecisionRecord,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.store import TenantStore
from wakeful.testing.memory import MemoryStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
EARLY, LATE = datetime(2000, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)
Store = TenantStore | MemoryStore


def _h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


class _Offsets:
    """Each record with its ids as offsets from the first id of their kind."""

    def __init__(self) -> None:
        self.base: dict[str, int] = {}

    def see(self, kind: str, first: int | None) -> None:
        assert first is not None
        self.base.setdefault(kind, first)

    def of(self, kind: str, value: int | None) -> int | None:
        return None if value is None else value - self.base[kind]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, StoredEvent):
            d = value.model_dump(exclude={"ingest_time"})
            d["id"] = self.of("event", value.id)
            if value.retired_by is not None:
                d["retired_by"] = f"summary:{self.of('summary', int(value.retired_by[8:]))}"
            return d
        if isinstance(value, HandoffRecord):
            return value.model_dump(exclude={"created_at"}) | {"id": self.of("handoff", value.id)}
        if isinstance(value, DecisionRecord):
            d = value.model_dump(exclude={"created_at"})
            return d | {"source_event": self.of("event", value.source_event)}
        if isinstance(value, MemoryRecord):
            d = value.model_dump()
            return d | {
                "id": self.of("memory", value.id),
                "supersedes": self.of("memory", value.supersedes),
            }
        if isinstance(value, SummaryRecord):
            d = value.model_dump(exclude={"created_at"})
            return d | {
                "id": self.of("summary", value.id),
                "span_start": self.of("event", value.span_start),
                "span_end": self.of("event", value.span_end),
            }
        return value


def _events(ts: Store, out: dict[str, Any], n: _Offsets) -> list[int]:
    w1 = {"session_id": "s1", "wake_id": "w1"}
    w2 = {"session_id": "s2", "wake_id": "w2"}
    first = ts.append_events(
        "a1",
        [
            turn_event("k-ask", "hello\x00there", at=_h(0), **w1),
            turn_event("k-say", "looking", at=_h(0.1), role="assistant", meta={"reply": "0"}, **w1),
            tool_event(
                "tool_call",
                "k-call",
                '{"x":1}',
                call_id="c1",
                tool="grep",
                at=_h(0.1),
                tool_input={"x": 1},
                **w1,
            ),
            tool_event(
                "tool_result",
                "k-res",
                "found",
                call_id="c1",
                tool="grep",
                at=_h(0.2),
                meta={"skill": "deploy"},
                **w1,
            ),
            turn_event("k-ask2", "again", at=_h(1), **w2),
            tool_event("tool_call", "k-call2", "{}", call_id="c2", tool="grep", at=_h(1.1), **w2),
            tool_event(
                "tool_result",
                "k-res2",
                "boom",
                call_id="c2",
                tool="grep",
                at=_h(1.2),
                is_error=True,
                **w2,
            ),
            turn_event("k-loose", "no session", at=_h(1.3)),
            tool_event(  # a user's wake in the same session: hers alone
                "tool_result",
                "k-res-alice",
                "found for alice",
                call_id="c3",
                tool="grep",
                at=_h(1.4),
                meta={"skill": "triage"},
                user_id="alice",
                **w1,
            ),
        ],
    )
    n.see("event", first[0].id)
    # A retried step key returns the event as first stored (and the batch's new one after).
    again = ts.append_events(
        "a1",
        [
            turn_event("k-ask", "changed", at=_h(5), **w1),
            turn_event("k-new", "new", at=_h(2), **w2),
        ],
    )
    ids = [e.id for e in first + again[1:]]
    out["append"] = n(first)
    out["retry"] = n(again)
    out["empty append"] = ts.append_events("a1", [])
    out["max id"] = n.of("event", ts.max_event_id("a1"))
    out["events"] = n(ts.events("a1"))
    out["by wake"] = n(ts.events("a1", wake_id="w1"))
    out["to max id"] = n(ts.events("a1", max_id=ids[3]))
    out["first 2"] = n(ts.events("a1", limit=2))
    out["newest 3"] = n(ts.events("a1", limit=3, newest=True))
    out["newest 99"] = n(ts.events("a1", max_id=ids[4], limit=99, newest=True))
    for limit, session, page in [
        (3, None, 1),
        (3, "s1", 1),
        (2, "s2", 1),
        (1, "s2", 2),
        (2, "s1", 3),
    ]:
        out[f"recent {limit} {session} {page}"] = n(
            ts.recent_events("a1", max_id=ids[-1], limit=limit, session_id=session, page=page)
        )
    out["recent to id"] = n(ts.recent_events("a1", max_id=ids[2], limit=5))
    for after, upto, limit in [(0, ids[-1], 100), (ids[1], ids[-1], 3), (ids[4], ids[6], 9)]:
        out[f"positions {after == 0} {limit}"] = n(
            ts.events_with_positions("a1", after_id=after, upto_id=upto, limit=limit)
        )
    for session, wake in [("s1", None), (None, "w1"), ("s2", "w2"), (None, None)]:
        found = ts.tool_result_meta("a1", "grep", max_id=ids[-1], session_id=session, wake_id=wake)
        out[f"tool meta {session} {wake}"] = [(n.of("event", i), m) for i, m in found]
    for user in ("alice", "bob"):
        found = ts.tool_result_meta(
            "a1", "grep", max_id=ids[-1], session_id="s1", wake_id=None, user=user
        )
        out[f"tool meta s1 for {user}"] = [(n.of("event", i), m) for i, m in found]
    with pytest.raises(ValueError, match="limit and page"):
        ts.recent_events("a1", max_id=ids[-1], limit=0)
    return ids


def _note(session: str, step: str, goal: str) -> HandoffRecord:
    body = HandoffBody(goal=goal, current_state="ok", decisions=["D1"], next_actions=["go"])
    return HandoffRecord(
        agent="a1", session_id=session, wake_id=f"{session}:w", step_key=step, body=body
    )


def _handoffs(ts: Store, out: dict[str, Any], n: _Offsets) -> None:
    out["no note"] = ts.latest_handoff("a1")
    first = ts.write_handoff(_note("s1", "h1", "first"))
    n.see("handoff", first.id)
    rev = ts.knowledge_revision("a1")
    ts.write_handoff(_note("s2", "h2", "second"))
    out["note retry"] = n(ts.write_handoff(_note("s1", "h1", "rewritten")))
    out["revision after notes"] = ts.knowledge_revision("a1") - rev
    for name, kw in {
        "latest": {},
        "other session": {"other_than_session": "s2"},
        "other than s1": {"other_than_session": "s1"},
        "at revision": {"revision": rev},
        "before revisions": {"revision": rev - 1},
        "to max id": {"max_id": first.id},
        "before early": {"before": EARLY},
        "before late": {"before": LATE},
        "revision wins over before": {"before": EARLY, "revision": rev},
    }.items():
        out[f"note {name}"] = n(ts.latest_handoff("a1", **kw))


def _decision(decision_id: str, text: str, **fields: Any) -> DecisionRecord:
    return DecisionRecord(decision_id=decision_id, agent="a1", text=text, **fields)


def _decisions(ts: Store, out: dict[str, Any], ids: list[int]) -> None:
    start = ts.knowledge_revision("a1")
    ts.register_decision(_decision("d-b", "use Postgres", source_event=ids[0]))
    ts.register_decision(_decision("d-a", "freeze merges", expires_at=_h(1)))
    ts.register_decision(_decision("P-10", "page on-call"))  # ids sort by code point
    ts.register_decision(_decision("P-9", "no deploys on Friday"))
    out["register retry"] = ts.register_decision(_decision("d-b", "use MySQL")).text
    ts.register_decision(_decision("d-r", "retired", retired_at=_h(2), retired_by="person"))
    before_supersession = ts.knowledge_revision("a1")
    ts.register_decision(_decision("d-c", "use Postgres 18", key="db"))
    ts.supersede_decision("a1", "d-b", "d-c")
    ts.supersede_decision("a1", "d-b", "d-x")  # a superseded one keeps its first successor
    ts.supersede_decision("a1", "nope", "d-x")
    out["decision revisions"] = ts.knowledge_revision("a1") - start
    n = _Offsets()
    n.see("event", ids[0])
    now = ts.knowledge_revision("a1")
    for name, at, rev in [
        ("far future", LATE, None),
        ("far past", EARLY, None),
        ("before expiry", _h(0.5), now),
        ("after expiry", _h(1.5), now),
        ("retired later", _h(3), now),
        ("before supersession", _h(0.5), before_supersession),
        ("before any", _h(0.5), start),
    ]:
        out[f"decisions {name}"] = n(ts.live_decisions("a1", at, revision=rev))


def _memory(key: str, text: str, hours: float, step: str) -> MemoryRecord:
    return MemoryRecord(
        agent="a1", step_key=step, key=key, text=text, source="test", captured_at=_h(hours)
    )


def _memories(ts: Store, out: dict[str, Any], n: _Offsets) -> None:
    first = ts.remember(_memory("db", "Postgres 18", 2, "m-new"))
    n.see("memory", first.id)
    rev = ts.knowledge_revision("a1")
    out["late older"] = n(ts.remember(_memory("db", "Postgres 15", 1, "m-old")))
    out["memory retry"] = n(ts.remember(_memory("db", "again", 9, "m-new")))
    ts.remember(_memory("os", "Debian 12", 1, "os-old"))
    mid = ts.knowledge_revision("a1")  # os-new, later, ends Debian 12's validity
    ts.remember(_memory("os", "Debian 13", 3, "os-new"))
    now = ts.knowledge_revision("a1")
    out["memories"] = n(ts.memories("a1"))
    for hours in (0.5, 1.5, 2.5, 4):
        out[f"memories at {hours}"] = n(ts.memories("a1", at=_h(hours)))
        out[f"memories at {hours} rev"] = n(ts.memories("a1", at=_h(hours), revision=rev))
        out[f"memories at {hours} mid"] = n(ts.memories("a1", at=_h(hours), revision=mid))
        out[f"memories at {hours} now"] = n(ts.memories("a1", at=_h(hours), revision=now))
    with pytest.raises(ValueError, match="needs at="):
        ts.memories("a1", revision=rev)


def _summaries(ts: Store, out: dict[str, Any], n: _Offsets, ids: list[int]) -> None:
    out["no summaries"] = ts.summaries("a1")
    rec = SummaryRecord(
        agent="a1", step_key="sum-1", level=1, span_start=ids[0], span_end=ids[3], text="s1 done"
    )
    first = ts.add_summary(rec, retire_span=True, at=_h(3))
    n.see("summary", first.id)
    rev = ts.knowledge_revision("a1")
    later = rec.model_copy(update={"step_key": "sum-2", "span_start": ids[4], "span_end": ids[6]})
    ts.add_summary(later.model_copy(update={"text": "s2 done"}), retire_span=False, at=_h(4))
    out["summary retry"] = n(
        ts.add_summary(rec.model_copy(update={"text": "x"}), retire_span=True, at=_h(9))
    )
    out["summaries"] = n(ts.summaries("a1"))
    out["summaries to id"] = n(ts.summaries("a1", max_id=ids[4]))
    out["summaries at rev"] = n(ts.summaries("a1", revision=rev))
    out["summaries before"] = n(ts.summaries("a1", revision=rev - 1))
    out["events after retiring"] = n(ts.events("a1"))
    out["live events"] = n(ts.events("a1", include_retired=False))
    out["tool meta retired"] = (
        ts.tool_result_meta("a1", "grep", max_id=ids[-1], session_id="s1", wake_id=None) != []
    )


def _scenario(ts: Store) -> dict[str, Any]:
    out: dict[str, Any] = {"revision at start": ts.knowledge_revision("a1")}
    n = _Offsets()
    ids = _events(ts, out, n)
    _handoffs(ts, out, n)
    _decisions(ts, out, ids)
    _memories(ts, out, n)
    _summaries(ts, out, n, ids)
    # Another agent of the tenant: its own rows, the tenant's id sequence.
    ts.append_events("a2", [turn_event("k-a2", "other agent", at=_h(0))])
    out["other agent"] = n(ts.events("a2"))
    out["a1 untouched"] = n.of("event", ts.max_event_id("a1"))
    out["other revision"] = ts.knowledge_revision("a2")
    out["other step key"] = n(ts.append_events("a2", [turn_event("k-ask", "x", at=_h(0))]))
    with ts.unit() as uow:
        here = ts.within(uow)
        out["in a unit"] = n.of("event", uow.events.max_event_id("a1")) == n.of(
            "event", here.max_event_id("a1")
        )
    return out


def test_the_memory_store_reads_as_the_postgres_store_does(tenant: TenantStore) -> None:
    for name in ("a1", "a2"):
        tenant.upsert_agent(name, model="m", provider="anthropic", instructions="", spec={})
    expected = _scenario(tenant)
    got = _scenario(MemoryStore(tenant.name))
    assert list(got) == list(expected)
    for key in expected:
        assert got[key] == expected[key], key


def test_a_unit_of_another_tenant_is_refused() -> None:
    store, other = MemoryStore("one"), MemoryStore("two")
    with other.unit() as uow, pytest.raises(ValueError, match="tenant 'two' used for tenant 'one'"):
        store.within(uow)
