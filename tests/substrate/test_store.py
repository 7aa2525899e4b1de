"""Repository behaviour against a real Postgres (embedded), never a stand-in."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.activities.test_model_activity import statements
from tests.substrate.events import tool_event
from tests.substrate.summaries import retire_span
from wakeful.compiler.blocks import content_hash
from wakeful.compiler.oversize import WHOLE_TEXT_META
from wakeful.errors import UnknownAgentError
from wakeful.substrate.blob_chunks import CHUNK_KIND
from wakeful.substrate.records import (
    CompileRecord,
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    ModelCallRecord,
    WakeRecord,
)
from wakeful.substrate.sources import load_blocks
from wakeful.substrate.store import Store, TenantStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _agent(ts: TenantStore, name: str = "a1") -> str:
    ts.upsert_agent(name, model="m", provider="anthropic", instructions="be brief", spec={})
    return name


def _turn(key: str, text: str, *, role: str = "user", session: str = "s1") -> EventIn:
    return EventIn(
        step_key=key, kind="turn", role=role, text=text, session_id=session, event_time=T0
    )


def test_append_is_idempotent_on_step_key(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    first = tenant.append_events(agent, [_turn("k1", "hello"), _turn("k2", "world")])
    again = tenant.append_events(agent, [_turn("k1", "hello"), _turn("k2", "world")])
    assert [e.id for e in first] == [e.id for e in again]
    assert tenant.count_events(agent) == 2
    assert [e.text for e in tenant.events(agent)] == ["hello", "world"]


def test_a_retry_never_overwrites_the_first_write(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    tenant.append_events(agent, [_turn("k1", "original")])
    (kept,) = tenant.append_events(agent, [_turn("k1", "rewritten")])
    assert kept.text == "original"


def test_newest_events_come_back_in_append_order(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    tenant.append_events(agent, [_turn(f"k{i}", f"m{i}") for i in range(10)])
    assert [e.text for e in tenant.events(agent, limit=3, newest=True)] == ["m7", "m8", "m9"]


def test_unknown_agent_error_names_the_fix(tenant: TenantStore) -> None:
    with pytest.raises(UnknownAgentError, match="wakeful agent create"):
        tenant.get_agent("ghost")


def test_tenants_cannot_see_each_other(store: Store) -> None:
    a, b = store.tenant("iso-a"), store.tenant("iso-b")
    _agent(a, "shared-name")
    _agent(b, "shared-name")
    a.append_events("shared-name", [_turn("same-key", "secret of a")])
    b.append_events("shared-name", [_turn("same-key", "secret of b")])
    assert [e.text for e in a.events("shared-name")] == ["secret of a"]
    assert [e.text for e in b.events("shared-name")] == ["secret of b"]
    digest = a.put_blob("note", "only a")
    with pytest.raises(Exception, match="no blob"):
        b.get_blob(digest)


def test_memory_supersession_keeps_both_with_validity(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    # Two memories of one key, in the order they were captured.
    old, new = (
        tenant.remember(
            MemoryRecord(
                agent=agent,
                step_key=step,
                key="db.version",
                text=text,
                source="repo",
                captured_at=at,
            )
        )
        for step, text, at in (
            ("m1", "Postgres 15", T0),
            ("m2", "Postgres 18", T0 + timedelta(days=1)),
        )
    )
    assert new.supersedes == old.id
    assert [m.text for m in tenant.memories(agent)] == ["Postgres 18"]
    assert [m.text for m in tenant.memories(agent, at=T0 + timedelta(hours=1))] == ["Postgres 15"]


def test_summary_retires_its_span_but_deletes_nothing(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    evs = tenant.append_events(agent, [_turn(f"k{i}", f"m{i}") for i in range(4)])
    at = T0 + timedelta(days=2)
    retire_span(tenant, agent, (evs[0].id, evs[2].id), "m0..m2", at=at, step_key="sum1")
    assert tenant.count_events(agent) == 4
    live = tenant.events(agent, include_retired=False)
    assert [e.text for e in live] == ["m3"]
    blocks = load_blocks(tenant, agent, max_event_id=evs[-1].id, as_of=at, current_wake_id=None)
    assert [b.text for b in blocks if b.kind == "turn"] == ["m3"]
    assert [b.text for b in blocks if b.kind == "summary"] == ["m0..m2"]
    # As of before the retirement, the raw span is what the compiler saw.
    before = load_blocks(tenant, agent, max_event_id=evs[-1].id, as_of=T0, current_wake_id=None)
    assert [b.text for b in before if b.kind == "turn"] == ["m0", "m1", "m2", "m3"]


def test_snapshot_drops_orphaned_tool_results(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    tenant.append_events(
        agent,
        [
            tool_event("tool_call", "c", "{}", call_id="t1", tool="ls", at=T0),
            tool_event("tool_result", "r", "a b", call_id="t1", tool="ls", at=T0),
            _turn("u", "thanks"),
        ],
    )
    last = tenant.max_event_id(agent)
    tail = load_blocks(
        tenant,
        agent,
        max_event_id=last,
        as_of=T0,
        current_wake_id=None,
        recent_limit=2,
        recent_page=1,
    )
    assert [b.kind.value for b in tail if b.seq] == ["turn"]


def test_the_raw_tail_starts_on_page_boundaries(tenant: TenantStore) -> None:
    """The tail's first event moves once per page, never with every event: windows keep
    the same start of history (and so the provider's cache) between page turns."""
    agent = _agent(tenant)
    other = _agent(tenant, "a2")
    starts, sizes = [], []
    for n in range(30):
        tenant.append_events(agent, [_turn(f"a{n}", f"turn {n}")])
        tenant.append_events(agent, [_turn(f"x{n}", f"elsewhere {n}", session="s2")])
        tenant.append_events(other, [_turn(f"o{n}", f"other {n}")])  # interleaved ids
        tail = tenant.recent_events(
            agent, max_id=tenant.max_event_id(agent), limit=5, session_id="s1", page=4
        )
        starts.append(int(tail[0].text.split()[1]))
        sizes.append(len(tail))
        assert all(t.text.startswith("turn") for t in tail)
    # session ordinals 0..n: the tail starts at the largest multiple of 4 <= (n + 1) - 5
    assert starts == [max(0, n - 4) // 4 * 4 for n in range(30)]
    assert all(min(n + 1, 5) <= size <= 8 for n, size in enumerate(sizes))
    # page 1, or no session: the agent's newest `limit` events, exactly
    last = tenant.max_event_id(agent)
    exact = tenant.recent_events(agent, max_id=last, limit=6)
    assert [e.text for e in exact][-2:] == ["turn 29", "elsewhere 29"] and len(exact) == 6
    paged = tenant.recent_events(agent, max_id=last, limit=6, page=4)
    assert paged == exact
    with pytest.raises(ValueError, match="page must be >= 1"):
        tenant.recent_events(agent, max_id=1, limit=5, page=0)


def test_new_session_sees_the_handoff_not_the_old_transcript(tenant: TenantStore) -> None:
    agent = _agent(tenant)
    tenant.append_events(agent, [_turn("k1", "old talk", session="s1")])
    tenant.write_handoff(
        HandoffRecord(
            agent=agent,
            session_id="s1",
            wake_id="w1",
            step_key="h1",
            body=HandoffBody(goal="g", current_state="done", next_actions=["ship"]),
        )
    )
    tenant.register_decision(DecisionRecord(decision_id="D-1", agent=agent, text="no deletes"))
    blocks = load_blocks(
        tenant,
        agent,
        max_event_id=tenant.max_event_id(agent),
        as_of=datetime.now(UTC) + timedelta(minutes=1),
        current_wake_id=None,
        session_id="s2",
    )
    kinds = sorted(b.kind.value for b in blocks)
    assert kinds == ["handoff_note", "load_bearing"]
    note = next(b for b in blocks if b.kind == "handoff_note")
    assert "## Next actions\n- ship" in note.text


def test_a_handoff_note_is_written_at_the_revision_it_bumps_in_one_statement(
    tenant: TenantStore,
) -> None:
    agent = _agent(tenant)
    tenant.register_decision(DecisionRecord(decision_id="D-1", agent=agent, text="no deletes"))

    def note(goal: str) -> HandoffRecord:
        body = HandoffBody(goal=goal, current_state="done \x00 here")
        return HandoffRecord(agent=agent, session_id="s1", wake_id="w1", step_key="h1", body=body)

    with statements(tenant) as sent:
        first = tenant.write_handoff(note("g"))
    assert len(sent) == 1
    assert tenant.knowledge_revision(agent) == 2
    assert tenant.latest_handoff(agent, revision=1) is None  # written at the revision 2
    assert tenant.latest_handoff(agent, revision=2) == first
    assert first.body.current_state == "done \ufffd here"  # cleaned as every write is
    # A retry bumps the revision too, and gets the first note.
    assert tenant.write_handoff(note("other")) == first
    assert tenant.knowledge_revision(agent) == 3 and len(tenant.handoffs(agent)) == 1


def test_a_wake_closes_with_its_status_and_only_its_own_stream_kept_in_one_statement(
    tenant: TenantStore,
) -> None:
    agent = _agent(tenant)
    for n in (1, 2):
        tenant.start_wake(
            WakeRecord(
                wake_id=f"w{n}",
                agent=agent,
                session_id="s1",
                workflow_id="wf",
                number=n,
                goal={"kind": "message", "text": "g"},
                started_at=T0,
            )
        )
        tenant.publish_stream(agent, f"w{n}", 0, [("text", {"text": f"preview {n}"})])
    with statements(tenant) as sent:
        tenant.finish_wake_keeping_its_stream(agent, "w2", "done", T0 + timedelta(minutes=1))
    assert len(sent) == 1
    assert [(w.wake_id, w.status) for w in tenant.wakes(agent)] == [
        ("w1", "running"),
        ("w2", "done"),
    ]
    assert tenant.stream_since("w1") == []  # an earlier wake's previews go
    assert [p.data for p in tenant.stream_since("w2")] == [{"text": "preview 2"}]


def test_a_reply_and_its_record_are_stored_in_one_statement_once_per_step(
    tenant: TenantStore,
) -> None:
    agent = _agent(tenant)
    tenant.start_wake(
        WakeRecord(
            wake_id="w1",
            agent=agent,
            session_id="s1",
            workflow_id="wf",
            number=1,
            goal={"kind": "message", "text": "g"},
            started_at=T0,
        )
    )

    def call(output: str) -> ModelCallRecord:
        return ModelCallRecord(
            agent=agent,
            wake_id="w1",
            step_key="wf:w1:0:model",
            call_index=0,
            provider="anthropic",
            model="m",
            window_hash="w",
            output_hash=content_hash(output),
            stop_reason="end_turn",
            input_tokens=1,
            output_tokens=1,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=0,
            cost_usd=0.0,
        )

    with statements(tenant) as sent:
        first, digest = tenant.record_model_call_with_output(call('{"a": 1}'), '{"a": 1}')
    assert len(sent) == 1
    assert (first.output_hash, tenant.get_blob(digest)) == (digest, '{"a": 1}')
    assert tenant.model_call_by_step("wf:w1:0:model") == first
    # A concurrent attempt's reply is stored too, and gets the first record.
    again, other = tenant.record_model_call_with_output(call('{"b": 2}'), '{"b": 2}')
    assert again == first and tenant.get_blob(other) == '{"b": 2}'


def test_a_compiles_blobs_and_record_are_written_in_one_statement_once_per_step(
    tenant: TenantStore,
) -> None:
    agent = _agent(tenant)
    # A window large enough to be stored in chunks: which are stored is read first.
    messages = [{"role": "user", "content": f"m{n} " * 400} for n in range(40)]
    window = json.dumps({"messages": messages}, separators=(",", ":"))  # as windows are
    items = [("window", window), ("ledger", "{}"), ("policy", "{}"), ("spec", "{}")]

    def compile_record(step: str, hashes: list[str]) -> CompileRecord:
        return CompileRecord(
            agent=agent,
            wake_id="w1",
            step_key=step,
            call_index=0,
            as_of=T0,
            max_event_id=0,
            goal={"kind": "message", "text": "g"},
            policy_hash=hashes[2],
            snapshot_hash="s",
            window_hash=hashes[0],
            ledger_hash=hashes[1],
            stable_prefix_hash="x",
            input_tokens=1,
            tokens_by_bucket={},
            spec_hash=hashes[3],
        )

    hashes, rows = tenant.blob_rows(items)
    assert hashes == [content_hash(c) for _, c in items]
    assert CHUNK_KIND in {r["kind"] for r in rows}
    with statements(tenant) as sent:
        first = tenant.record_compile_with_blobs(compile_record("wf:w1:0:compile", hashes), rows)
    assert len(sent) == 1
    assert [tenant.get_blob(h) for h in hashes] == [c for _, c in items]
    assert tenant.compiles("w1") == [first]
    # A retry writes no second record; its window's chunks were stored: none is sent again.
    hashes, rows = tenant.blob_rows(items)
    assert CHUNK_KIND not in {r["kind"] for r in rows}
    other = compile_record("wf:w1:0:compile", [*hashes[:3], hashes[1]])
    assert tenant.record_compile_with_blobs(other, rows) == first


def test_an_append_stores_the_blobs_its_events_name_in_the_same_statement(
    tenant: TenantStore,
) -> None:
    agent = _agent(tenant)
    long = "a long user turn " * 400  # its whole text is kept as a blob
    (digest,), rows = tenant.blob_rows([("tool_result", "the whole result")])
    with statements(tenant) as sent:
        turn, result = tenant.append_events(
            agent,
            [_turn("t1", long), _turn("r1", "the result, shown in part", role="assistant")],
            rows,
        )
    assert len(sent) == 1
    assert tenant.get_blob(turn.meta[WHOLE_TEXT_META]) == long
    assert tenant.get_blob(digest) == "the whole result"
    assert tenant.append_events(agent, [_turn("r1", "again")], rows) == [result]


# Text Postgres refuses: NUL (text and jsonb) and lone surrogates (psycopg cannot encode them).
_UNSTORABLE = "a\x00b\ud800c\udfffd"
_STORED = "a\ufffdb\ufffdc\ufffdd"


def test_text_postgres_refuses_is_stored_with_replacement_characters(tenant: TenantStore) -> None:
    """Every way in writes it: event text and JSON, blobs, wake goals, memories, handoffs,
    agent specs. One rule at the store, so no caller can stall a wake on a bad byte."""
    from wakeful.compiler.blocks import content_hash
    from wakeful.substrate.records import WakeRecord

    bad = _UNSTORABLE
    tenant.upsert_agent(
        "a1", model="m", provider="anthropic", instructions=bad, spec={bad: [bad, {"k": bad}]}
    )
    row = tenant.get_agent("a1")
    assert row["instructions"] == _STORED
    assert row["spec"] == {_STORED: [_STORED, {"k": _STORED}]}
    (event,) = tenant.append_events(
        "a1",
        [
            EventIn(
                step_key=f"step-{bad}",
                kind="tool_result",
                text=bad,
                tool_call_id="c1",
                tool_name="read_file",
                tool_input={"path": bad, bad: 1},
                meta={"m": bad},
                event_time=T0,
            )
        ],
    )
    assert event.text == _STORED and event.tool_input == {"path": _STORED, _STORED: 1}
    assert event.meta == {"m": _STORED}
    assert event.content_hash == content_hash(_STORED, "tool_result", "", "c1")
    # A retry of the same append finds the first write.
    (again,) = tenant.append_events("a1", [_turn(f"step-{bad}", "other")])
    assert again.id == event.id
    digest = tenant.put_blob("tool_result", bad)
    assert tenant.get_blob(digest) == _STORED and digest == content_hash(_STORED)
    wake = tenant.start_wake(
        WakeRecord(
            wake_id="a1:1",
            agent="a1",
            session_id="a1:s0001",
            workflow_id="wf",
            number=1,
            goal={"kind": "webhook", "text": bad},
            idempotency_key=bad,
            started_at=T0,
        )
    )
    assert wake.goal == {"kind": "webhook", "text": _STORED}
    assert wake.idempotency_key == _STORED
    memory = tenant.remember(
        MemoryRecord(agent="a1", step_key="m1", key=bad, text=bad, source=bad, captured_at=T0)
    )
    assert (memory.key, memory.text) == (_STORED, _STORED)
    note = tenant.write_handoff(
        HandoffRecord(
            agent="a1",
            session_id="a1:s0001",
            wake_id="a1:1",
            step_key="h1",
            body=HandoffBody(goal=bad, current_state="ok", blockers=[bad]),
        )
    )
    assert note.body.goal == _STORED and note.body.blockers == [_STORED]


def test_a_chunked_window_with_unstorable_text_reads_back_whole(tenant: TenantStore) -> None:
    """Windows are stored in chunks and checked against their hash when read."""
    from wakeful.substrate.blob_chunks import CHUNK_CHARS

    window = "[" + ",".join(f'{{"i": {i}, "t": "{_UNSTORABLE}"}}' for i in range(3000)) + "]"
    assert len(window) > 2 * CHUNK_CHARS
    digest = tenant.put_blob("window", window)
    assert tenant.get_blob(digest) == window.replace(_UNSTORABLE, _STORED)
