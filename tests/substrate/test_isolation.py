"""Tenant isolation: one tenant cannot read, retrieve or overwrite another's rows or vectors.

Tenant A holds a full set of rows, every text marked ``SECRET-A``; tenant B has an agent of
the same name and calls **every public method** of :class:`TenantStore`, and of every
repository of B's unit of work (``uow.events``, ``uow.knowledge``, ...), with A's
identifiers (agent name, wake ids, step keys, event/memory/summary ids, blob hashes). Each
call must (1) return nothing of A's, (2) send SQL that binds B's tenant and never A's, and
(3) leave every row of A's exactly as it was. The methods are found by reflection: a new
method without a case in ``cases()`` fails this test until someone says how to attack it.
"""

from __future__ import annotations

import functools
import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from tests.substrate.events import tool_event
from wakeful.compiler.blocks import content_hash
from wakeful.errors import StoreError, UserError
from wakeful.substrate import schema as t
from wakeful.substrate.doc_chunks import DocumentFile
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.records import (
    CompileRecord,
    ConsolidationLogRecord,
    DecisionRecord,
    EventIn,
    HandoffBody,
    HandoffRecord,
    MemoryRecord,
    ModelCallRecord,
    SummaryRecord,
    WakeRecord,
)
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.unit_of_work import UnitOfWork
from wakeful.substrate.vectors.base import FusionMode, SeqKey, VectorPoint, VectorQuery, VectorStore
from wakeful.substrate.vectors.edge import EdgeVectorStore
from wakeful.substrate.vectors.memory import MemoryVectorStore
from wakeful.tool_results import HANDLE_METAS

SECRET = "SECRET-A"
AGENT = "a1"
NOW = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
# Not repository methods: the unit of work a store runs its calls in, and the stores whose
# calls run in a given unit (``within``) or each in its own (``standalone``).
NOT_REPOSITORY = {"unit", "within", "standalone"}


@dataclass
class Seeded:
    """Tenant A's identifiers, which tenant B will try to use."""

    wake_id: str = "w-shared"
    event_ids: list[int] = field(default_factory=list)
    memory_ids: list[int] = field(default_factory=list)
    summary_ids: list[int] = field(default_factory=list)
    doc_chunk_ids: list[int] = field(default_factory=list)
    blob: str = ""
    only_a_blob: str = ""


def _wake(number: int, tag: str) -> WakeRecord:
    return WakeRecord(
        wake_id="w-shared",
        agent=AGENT,
        session_id="s-shared",
        workflow_id="wf",
        number=number,
        goal={"text": tag},
        idempotency_key=f"key-{number}",
        started_at=NOW,
    )


def _compile(tag: str) -> CompileRecord:
    return CompileRecord(
        agent=AGENT,
        wake_id="w-shared",
        step_key="wf:w-shared:0:compile",
        call_index=0,
        as_of=NOW,
        max_event_id=1,
        goal={"text": tag},
        policy_hash=tag,
        snapshot_hash=tag,
        window_hash=tag,
        ledger_hash=tag,
        stable_prefix_hash=tag,
        input_tokens=1,
        tokens_by_bucket={"stable": 1},
    )


def _call(tag: str) -> ModelCallRecord:
    return ModelCallRecord(
        agent=AGENT,
        wake_id="w-shared",
        step_key="wf:w-shared:0:model",
        call_index=0,
        provider="anthropic",
        model=tag,
        window_hash=tag,
        output_hash=tag,
        stop_reason="end_turn",
        input_tokens=1,
        output_tokens=1,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=0,
        cost_usd=0.0,
    )


def _events(tag: str) -> list[EventIn]:
    return [
        EventIn(
            step_key=f"ev:{n}",
            kind="turn",
            role="user",
            text=f"{tag} turn {n} about the launch codes",
            session_id="s-shared",
            wake_id="w-shared",
            event_time=NOW + timedelta(minutes=n),
            user_id="alice" if n == 3 else None,  # a user's wake wrote the last
        )
        for n in range(4)
    ]


def seed_skill_load(ts: TenantStore, tag: str) -> None:
    """A load_skill result naming ``tag``: what ``tool_result_meta`` finds."""
    skill = tool_event(
        "tool_result",
        "ev:skill",
        f"{tag} skill body",
        call_id="call-skill",
        tool="load_skill",
        at=NOW + timedelta(minutes=5),
        session_id="s-shared",
        wake_id="w-shared",
        meta={"skill": tag},
    )
    ts.append_events(AGENT, [skill])


def seed(ts: TenantStore, tag: str) -> Seeded:
    """The same shapes, identifiers and step keys in either tenant; only the texts differ."""
    out = Seeded()
    ts.upsert_agent(AGENT, model="m", provider="anthropic", instructions=tag, spec={"t": tag})
    ts.start_wake(_wake(1, tag))
    out.event_ids = [e.id for e in ts.append_events(AGENT, _events(tag))]
    out.blob = ts.put_blob("note", f"{SECRET} shared blob")
    out.only_a_blob = ts.put_blob("note", f"{tag} only here")
    ts.record_compile(_compile(tag))
    ts.record_model_call(_call(tag))
    body = HandoffBody(goal=tag, current_state=tag)
    ts.write_handoff(
        HandoffRecord(agent=AGENT, session_id="s0", wake_id="w0", step_key="hand", body=body)
    )
    ts.write_handoff(
        HandoffRecord(
            agent=AGENT,
            session_id="s1",
            wake_id="w1",
            step_key="hand-alice",
            body=body,
            user_id="alice",
        )
    )
    ts.register_decision(DecisionRecord(decision_id="D-1", agent=AGENT, text=tag))
    ts.record_decision(AGENT, key="alice.k", text=tag, decision_id="DEC-9", user_id="alice")
    mem = MemoryRecord(agent=AGENT, step_key="mem", key="k", text=tag, source=tag, captured_at=NOW)
    out.memory_ids = [m.id for m in [ts.remember(mem)] if m.id is not None]
    summary = ts.add_summary(
        SummaryRecord(
            agent=AGENT,
            step_key="sum",
            level=1,
            span_start=out.event_ids[0],
            span_end=out.event_ids[0],
            text=tag,
        ),
        retire_span=False,
        at=NOW,
    )
    out.summary_ids = [summary.id] if summary.id is not None else []
    ts.log_consolidation(
        ConsolidationLogRecord(
            agent=AGENT, step_key="log", round_id="r", action="draft", status="drafted", subject=tag
        )
    )
    ts.set_index_cursor(AGENT, "events", out.event_ids[-1])
    ts.add_documents(AGENT, [DocumentFile("shared.md", f"# {tag}\n\n{tag} document")])
    out.doc_chunk_ids = [c.id for c in ts.doc_chunks(AGENT)]
    ts.claim_delivery(AGENT, "key-digest-shared", f"event-digest-{tag}")
    with ts.unit() as uow:  # what a streaming model call of the shared wake said
        uow.stream.publish_stream(AGENT, out.wake_id, 0, [("text", {"text": f"{SECRET} {tag}"})])
        uow.cooldowns.cool_down_route("anthropic/m", NOW + timedelta(days=1), f"{SECRET} {tag}")
    return out


def cases(a: Seeded) -> dict[str, Callable[[Any], Any]]:
    """How tenant B calls each method with tenant A's identifiers: each case is called with
    B's store, and with the repository of B's unit of work that has the method."""
    ev, mem, summ = a.event_ids, a.memory_ids, a.summary_ids
    wid = a.wake_id
    body = HandoffBody(goal="b", current_state="b")
    span = SummaryRecord(
        agent=AGENT, step_key="sum-b", level=1, span_start=ev[0], span_end=ev[-1], text="b"
    )
    return {
        "upsert_agent": lambda b: b.upsert_agent(
            AGENT, model="x", provider="anthropic", instructions="b", spec={}
        ),
        "get_agent": lambda b: b.get_agent(AGENT),
        # Tenant A's key digest with A's event digest: B's own claim must answer, never A's.
        "claim_delivery": lambda b: b.claim_delivery(
            AGENT, "key-digest-shared", f"event-digest-{SECRET}"
        ),
        "claim_delivered": lambda b: b.claim_delivered(
            AGENT, "key-digest-shared", f"event-digest-{SECRET}"
        ),
        "release_claim": lambda b: b.release_claim(
            AGENT, "key-digest-shared", f"event-digest-{SECRET}"
        ),
        "list_agents": lambda b: b.list_agents(),
        "start_wake": lambda b: b.start_wake(_wake(7, "b")),
        "finish_wake": lambda b: b.finish_wake(wid, "failed", NOW),
        "finish_wake_keeping_its_stream": lambda b: b.finish_wake_keeping_its_stream(
            AGENT, wid, "failed", NOW
        ),
        "wakes": lambda b: b.wakes(AGENT),
        "wake_by_number": lambda b: b.wake_by_number(AGENT, 1),
        "wake_by_key": lambda b: b.wake_by_key(AGENT, "key-1"),
        "append_events": lambda b: b.append_events(AGENT, _events("b")),
        "events": lambda b: (b.events(AGENT), b.events(AGENT, wake_id=wid, max_id=ev[-1])),
        "recent_events": lambda b: (
            b.recent_events(AGENT, max_id=ev[-1], limit=100),
            b.recent_events(AGENT, max_id=ev[-1], limit=100, session_id="s-shared"),
        ),
        "event_by_step": lambda b: (b.event_by_step("ev:0"), b.event_by_step("ev:3")),
        "max_event_id": lambda b: b.max_event_id(AGENT),
        "knowledge_revision": lambda b: b.knowledge_revision(AGENT),
        "snapshot_horizon": lambda b: b.snapshot_horizon(AGENT),
        "count_events": lambda b: b.count_events(AGENT),
        "events_with_positions": lambda b: b.events_with_positions(
            AGENT, after_id=0, upto_id=ev[-1], limit=100
        ),
        "session_count": lambda b: b.session_count(AGENT, "s-shared", max_id=ev[-1]),
        "session_events_after_counted": lambda b: b.session_events_after_counted(
            AGENT, "s-shared", after_id=0, max_id=ev[-1]
        ),
        "last_retired_revision": lambda b: b.last_retired_revision(AGENT),
        # B's agent of A's agent's name never holds A's blob as a handle of its own
        "holds_result": lambda b: _is_false(b.holds_result(AGENT, a.only_a_blob, HANDLE_METAS)),
        "tool_result_meta": lambda b: (
            b.tool_result_meta(
                AGENT, "load_skill", max_id=10**12, session_id="s-shared", wake_id=None
            ),
            b.tool_result_meta(AGENT, "load_skill", max_id=10**12, session_id=None, wake_id=wid),
        ),
        "index_cursor": lambda b: b.index_cursor(AGENT, "events"),
        "set_index_cursor": lambda b: b.set_index_cursor(AGENT, "events", 10**12),
        "reset_index_cursor": lambda b: b.reset_index_cursor(AGENT, "events"),
        "add_documents": lambda b: b.add_documents(
            AGENT, [DocumentFile("shared.md", "# b\n\nb changed")]
        ),
        "remove_document": lambda b: b.remove_document(AGENT, "shared.md"),
        "documents": lambda b: b.documents(AGENT),
        "doc_chunks": lambda b: (b.doc_chunks(AGENT), b.doc_chunks(AGENT, live_only=False)),
        "max_doc_chunk_id": lambda b: b.max_doc_chunk_id(AGENT),
        # A's chunk ids are never B's live chunks.
        "live_doc_chunks": lambda b: _is_empty(b.live_doc_chunks(AGENT, a.doc_chunk_ids)),
        "superseded_doc_chunk_count": lambda b: b.superseded_doc_chunk_count(AGENT, upto_id=10**12),
        "superseded_doc_chunks": lambda b: _is_empty(
            set(b.superseded_doc_chunks(AGENT, upto_id=10**12)) & set(a.doc_chunk_ids)
        ),
        "put_blob": lambda b: b.put_blob("note", f"{SECRET} shared blob"),
        "put_blobs": lambda b: b.put_blobs(
            [("note", f"{SECRET} shared blob"), ("note", "b only"), ("note", "b only")]
        ),
        "get_blob": lambda b: _raises(StoreError, lambda: b.get_blob(a.only_a_blob)),
        # A's blob of the same content is A's: B's rows to write are B's own.
        "blob_rows": lambda b: b.blob_rows([("note", "b only")]),
        "record_compile": lambda b: b.record_compile(_compile("b")),
        "record_compile_with_blobs": lambda b: b.record_compile_with_blobs(
            _compile("b"), [{"hash": content_hash("b only"), "kind": "note", "content": "b only"}]
        ),
        "record_model_call": lambda b: b.record_model_call(_call("b")),
        "record_model_call_with_output": lambda b: b.record_model_call_with_output(
            _call("b"), "b reply"
        ),
        "compiles": lambda b: b.compiles(wid),
        "model_calls": lambda b: b.model_calls(wid),
        "model_call_by_step": lambda b: b.model_call_by_step("wf:w-shared:0:model"),
        # its statement is checked for its tenant like every other (a sum shows no secret)
        "spend_since": lambda b: b.spend_since(AGENT, NOW - timedelta(days=3650)),
        "write_handoff": lambda b: b.write_handoff(
            HandoffRecord(agent=AGENT, session_id="s0", wake_id="w0", step_key="hand", body=body)
        ),
        "latest_handoff": lambda b: (
            b.latest_handoff(AGENT),
            b.latest_handoff(AGENT, revision=10**9),
            b.latest_handoff(AGENT, scoped=True, user="alice"),
        ),
        "handoffs": lambda b: b.handoffs(AGENT),
        "register_decision": lambda b: b.register_decision(
            DecisionRecord(decision_id="D-1", agent=AGENT, text="b")
        ),
        "supersede_decision": lambda b: b.supersede_decision(AGENT, "D-1", "D-2"),
        # The registry by key: B's writes on A's key and ids touch B's rows only (a refusal,
        # e.g. of a decision B already retired, is one of B's errors, never A's row).
        "decision": lambda b: b.decision(AGENT, "D-1"),
        "record_decision": lambda b: (
            b.record_decision(AGENT, key="k", text="b"),
            b.record_decision(AGENT, key="alice.k", text="b", user_id="alice"),
        ),
        "supersede_with": lambda b: _refused(
            lambda: b.supersede_with(AGENT, "D-1", text="b", at=NOW)
        ),
        "retire_decision": lambda b: _refused(lambda: b.retire_decision(AGENT, "D-1", at=NOW)),
        "accept_proposal": lambda b: _refused(lambda: b.accept_proposal(AGENT, "D-1", at=NOW)),
        "expire_decisions": lambda b: b.expire_decisions(
            AGENT, NOW + timedelta(days=3650), step="wf:w-shared:0:compile"
        ),
        "expire_then_horizon": lambda b: b.expire_then_horizon(
            AGENT, NOW + timedelta(days=3650), step="wf:w-shared:0:compile"
        ),
        "live_decisions": lambda b: (
            b.live_decisions(AGENT, NOW + timedelta(days=1)),
            b.live_decisions(AGENT, NOW + timedelta(days=1), revision=10**9),
        ),
        "remember": lambda b: b.remember(
            MemoryRecord(
                agent=AGENT,
                step_key="mem-b",
                key="k",
                text="b",
                source="b",
                captured_at=NOW + timedelta(hours=1),
            )
        ),
        "memories": lambda b: (
            b.memories(AGENT),
            b.memories(AGENT, at=NOW),
            b.memories(AGENT, at=NOW + timedelta(days=1), revision=10**9),
        ),
        "add_summary": lambda b: b.add_summary(span, retire_span=True, at=NOW),
        "summaries": lambda b: (b.summaries(AGENT), b.summaries(AGENT, revision=10**9)),
        "events_by_ids": lambda b: b.events_by_ids(AGENT, ev),
        "session_bounds": lambda b: b.session_bounds(AGENT),
        "summaries_by_ids": lambda b: b.summaries_by_ids(AGENT, summ),
        "all_decisions": lambda b: b.all_decisions(AGENT),
        "stream_since": lambda b: b.stream_since(wid),
        "keep_latest_stream": lambda b: b.keep_latest_stream(AGENT, "w-other"),
        "publish_stream": lambda b: b.publish_stream(AGENT, wid, 0, [("text", {"text": "b"})]),
        "cooling_routes": lambda b: b.cooling_routes(["anthropic/m"], NOW),
        "cool_down_route": lambda b: b.cool_down_route("anthropic/m", NOW, "b"),
        "compile_alternates": lambda b: b.compile_alternates(wid, 0),
        "memory_history": lambda b: b.memory_history(AGENT),
        "recent_compiles": lambda b: b.recent_compiles(AGENT, 100),
        "commit_summary": lambda b: b.commit_summary(
            span.model_copy(update={"step_key": "sum-c"}), at=NOW, event_ids=ev
        ),
        "mark_memories": lambda b: b.mark_memories(AGENT, mem, "stale"),
        "retire_memories": lambda b: b.retire_memories(AGENT, mem, NOW),
        "log_consolidation": lambda b: b.log_consolidation(
            ConsolidationLogRecord(
                agent=AGENT,
                step_key="log",
                round_id="r",
                action="draft",
                status="drafted",
                subject="b",
            )
        ),
        "logged": lambda b: b.logged("log"),
        "consolidation_log": lambda b: b.consolidation_log(AGENT),
    }


def _is_empty(answer: set[int]) -> str:
    assert answer == set()
    return "none"


def _is_false(answer: bool) -> str:
    assert answer is False
    return "no"


def _raises(kind: type[Exception], fn: Callable[[], Any]) -> str:
    with pytest.raises(kind):
        fn()
    return "raised"


def store_methods() -> list[str]:
    return sorted(
        name
        for name, _ in inspect.getmembers(TenantStore, inspect.isfunction)
        if not name.startswith("_") and name not in NOT_REPOSITORY
    )


def _is_repository(member: Any) -> bool:
    return isinstance(member, functools.cached_property)


def repository_methods(ts: TenantStore) -> list[tuple[str, str]]:
    """``(attribute, method)`` of every public method of every repository a unit holds."""
    names = [n for n, _ in inspect.getmembers(UnitOfWork, _is_repository)]
    with ts.unit() as uow:
        repos = {name: type(getattr(uow, name)) for name in names}
    assert repos, "a unit of work holds no repositories"
    return sorted(
        (attr, name)
        for attr, cls in repos.items()
        for name, _ in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    )


def rows_of(store: Store, tenant: str) -> dict[str, list[str]]:
    """Every row of ``tenant`` in every tenant-scoped table, as sorted JSON."""
    out = {}
    with store.engine.connect() as conn:
        for table in t.metadata.sorted_tables:
            if "tenant" in table.c:
                rows = conn.execute(select(table).where(table.c.tenant == tenant))
                out[table.name] = sorted(
                    json.dumps(dict(r._mapping), default=str, sort_keys=True) for r in rows
                )
    return out


@contextmanager
def captured_sql(store: Store) -> Iterator[list[Any]]:
    params: list[Any] = []

    def hook(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        params.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield params
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


def _bound(parameters: Any) -> list[Any]:
    if isinstance(parameters, dict):
        return list(parameters.values())
    if isinstance(parameters, list | tuple):
        return [v for p in parameters for v in _bound(p)]
    return [parameters]


def test_every_method_has_an_isolation_case(store: Store) -> None:
    known = set(cases(Seeded(event_ids=[1])))
    missing = sorted(set(store_methods()) - known)
    assert not missing, (
        f"TenantStore methods without a tenant-isolation case: {missing}. Add a call to "
        "cases() in tests/substrate/test_isolation.py that uses tenant A's identifiers."
    )
    in_repositories = repository_methods(store.tenant("iso"))
    unknown = [f"{attr}.{name}" for attr, name in in_repositories if name not in known]
    assert not unknown, (
        f"repository methods without a tenant-isolation case: {unknown}. Add a call to "
        "cases() in tests/substrate/test_isolation.py that uses tenant A's identifiers."
    )
    # and TenantStore has every repository method as a one-shot method (and no other)
    assert sorted(name for _, name in in_repositories) == store_methods()


Calls = Callable[
    [TenantStore, dict[str, Callable[[Any], Any]]], list[tuple[str, Callable[[], Any]]]
]


def _store_calls(
    b: TenantStore, attack: dict[str, Callable[[Any], Any]]
) -> list[tuple[str, Callable[[], Any]]]:
    """Each method of B's store, in a transaction of its own."""
    return [(name, functools.partial(attack[name], b)) for name in store_methods()]


def _repository_calls(
    b: TenantStore, attack: dict[str, Callable[[Any], Any]]
) -> list[tuple[str, Callable[[], Any]]]:
    """Each method of each repository of a unit of B's, in a unit of its own."""

    def in_unit(attr: str, case: Callable[[Any], Any]) -> Any:
        with b.unit() as uow:
            return case(getattr(uow, attr))

    return [
        (f"{attr}.{name}", functools.partial(in_unit, attr, attack[name]))
        for attr, name in repository_methods(b)
    ]


@pytest.mark.parametrize("calls", [_store_calls, _repository_calls], ids=["store", "repositories"])
def test_no_method_reads_or_writes_another_tenants_rows(store: Store, calls: Calls) -> None:
    suffix = uuid.uuid4().hex[:8]
    a, b = store.tenant(f"iso-a-{suffix}"), store.tenant(f"iso-b-{suffix}")
    seed(b, "b")  # B first: A's rows get the larger ids, so a leaked max() would show
    seed_skill_load(b, "b")
    seeded = seed(a, SECRET)
    seed_skill_load(a, SECRET)
    before = rows_of(store, a.name)
    leaks, unscoped = [], []
    for name, call in calls(b, cases(seeded)):
        with captured_sql(store) as sql:
            result = call()
        if SECRET in json.dumps(result, default=_dump):
            leaks.append(name)
        for statement, parameters in sql:
            values = _bound(parameters)
            if a.name in values or b.name not in values:
                unscoped.append(f"{name}: {statement.split()[0]} {statement[:80]!r}")
    assert not leaks, f"methods returned tenant A's data to tenant B: {leaks}"
    assert not unscoped, "statements not scoped to the calling tenant:\n" + "\n".join(unscoped)
    assert rows_of(store, a.name) == before, "tenant B changed tenant A's rows"
    assert b.max_event_id(AGENT) < min(seeded.event_ids)


def test_a_unit_of_one_tenant_serves_no_other(store: Store) -> None:
    suffix = uuid.uuid4().hex[:8]
    a, b = store.tenant(f"iso-a-{suffix}"), store.tenant(f"iso-b-{suffix}")
    with (
        a.unit() as uow,
        pytest.raises(ValueError, match=r"^a unit of tenant 'iso-a-\w+' used for tenant 'iso-b-"),
    ):
        b.within(uow)


def _refused(call: Any) -> Any:
    try:
        return call()
    except UserError as exc:
        return str(exc)


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return str(value)


@pytest.fixture(params=["memory", "edge"])
def vectors(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    s: VectorStore = MemoryVectorStore() if request.param == "memory" else EdgeVectorStore(tmp_path)
    yield s
    s.close()


def test_no_one_retrieves_or_overwrites_another_tenants_vectors(
    store: Store, vectors: VectorStore
) -> None:
    suffix = uuid.uuid4().hex[:8]
    a, b = store.tenant(f"vec-a-{suffix}"), store.tenant(f"vec-b-{suffix}")
    seed(b, "b")
    seeded = seed(a, SECRET)
    emb = HashingEmbedder(dim=64)
    index = EventIndex(vectors, emb, count_tokens=len)
    # Four events and one document chunk each.
    assert index.catch_up(a, AGENT, upto=seeded.event_ids[-1]) == 5
    assert index.catch_up(b, AGENT, upto=seeded.event_ids[-1]) == 5

    # Retrieval, queries and fetches by B see B's chunks only.
    hits = index.gather(
        b, AGENT, query="launch codes", max_event_id=seeded.event_ids[-1], token_cap=10_000
    )
    assert hits and not [h for h in hits if SECRET in h.text]
    for mode in FusionMode:
        q = VectorQuery(
            tenant=b.name,
            agent=AGENT,
            mode=mode,
            text="launch codes",
            limit=50,
            dense=tuple(emb.embed(["launch codes"])[0]),
            embedder=emb.name,
        )
        assert not [h for h in vectors.query(q) if SECRET in h.text]
    keys = [SeqKey("s-shared", n) for n in range(4)]
    assert not [h for h in vectors.fetch(b.name, AGENT, keys) if SECRET in h.text]

    # Writes by B with A's chunk ids create or delete B's points, never A's.
    stolen = [f"ev:{i}" for i in seeded.event_ids]
    (vec,) = emb.embed(["overwritten"])
    vectors.upsert(
        [
            VectorPoint(
                tenant=b.name,
                agent=AGENT,
                chunk_id=c,
                text="overwritten",
                vector=tuple(vec),
                embedder=emb.name,
                session_id="s-shared",
                seq=n,
            )
            for n, c in enumerate(stolen)
        ]
    )
    vectors.delete(b.name, AGENT, stolen)
    assert vectors.count(a.name, AGENT) == 5
    mine = vectors.fetch(a.name, AGENT, keys)
    assert len(mine) == 4 and all(SECRET in h.text for h in mine)


def test_knowledge_revisions_are_per_tenant(store: Store) -> None:
    suffix = uuid.uuid4().hex[:8]
    a, b = store.tenant(f"rev-a-{suffix}"), store.tenant(f"rev-b-{suffix}")
    for i in range(3):
        a.register_decision(DecisionRecord(decision_id=f"D-{i}", agent=AGENT, text="a"))
    assert a.knowledge_revision(AGENT) == 3
    assert b.knowledge_revision(AGENT) == 0  # A's writes moved only A's counter
    b.register_decision(DecisionRecord(decision_id="D-0", agent=AGENT, text="b"))
    assert (a.knowledge_revision(AGENT), b.knowledge_revision(AGENT)) == (3, 1)
    # The snapshot's horizon reads the same counter, and the tenant's own events only.
    assert a.snapshot_horizon(AGENT)[:3] == (3, 0, 0)
    assert b.snapshot_horizon(AGENT)[:3] == (1, 0, 0)
    # Knowledge of a kind the agent has none of (in its own tenant) is not read.
    unread = {"handoffs", "summaries", "memories"}
    assert a.snapshot_horizon(AGENT).without == b.snapshot_horizon(AGENT).without == unread
    ghost = store.tenant(f"rev-c-{suffix}").snapshot_horizon(AGENT)
    assert ghost.without == {"decisions", *unread}
    b.upsert_agent(AGENT, model="x", provider="anthropic", instructions="b", spec={})
    (ev,) = b.append_events(
        AGENT, [EventIn(step_key=f"horizon-{suffix}", kind="turn", text="b", event_time=NOW)]
    )
    assert (a.snapshot_horizon(AGENT)[:3], b.snapshot_horizon(AGENT)[:3]) == (
        (3, 0, 0),
        (1, ev.id, 0),
    )
    assert b.snapshot_horizon(AGENT)[:2] == (b.knowledge_revision(AGENT), b.max_event_id(AGENT))
