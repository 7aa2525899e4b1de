"""The model activity against a real Postgres, with a fake provider behind the protocol.

It is async (provider SDKs are), so its blocking substrate work must run off the worker's
event loop; and a retry after the reply was stored must not call the provider again.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event
from temporalio.testing import ActivityEnvironment

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.model import ModelActivities
from wakeful.agents import AgentRegistry
from wakeful.compiler import EstimatingCounter
from wakeful.compiler.blocks import content_hash
from wakeful.contracts import CallModelIn, WakeRef
from wakeful.errors import StoreError
from wakeful.providers.base import ModelReply, Usage
from wakeful.substrate.records import CompileRecord, WakeRecord
from wakeful.substrate.store import Store, TenantStore

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@dataclass
class CountingProvider:
    name: str = "anthropic"
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> ModelReply:
        self.requests.append(request)
        return ModelReply(
            text="All done.",
            stop_reason="end_turn",
            usage=Usage(input_tokens=10, output_tokens=3),
            model="claude-sonnet-4-5",
            provider="anthropic",
        )


@contextmanager
def statement_threads(store: Store) -> Iterator[list[int]]:
    """The thread ids every SQL statement ran on, while the block runs."""
    seen: list[int] = []

    def hook(*_: Any) -> None:
        seen.append(threading.get_ident())

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


def _wake(tenant: TenantStore) -> WakeRef:
    wake = WakeRef(
        tenant=tenant.name,
        agent="a1",
        wake_id=f"w-{uuid.uuid4().hex[:8]}",
        session_id="s1",
        workflow_id="wf",
        number=1,
    )
    tenant.upsert_agent("a1", model="m", provider="anthropic", instructions="x", spec={})
    tenant.start_wake(
        WakeRecord(
            wake_id=wake.wake_id,
            agent="a1",
            session_id="s1",
            workflow_id="wf",
            number=1,
            goal={"kind": "message", "text": "summarise"},
            started_at=T0,
        )
    )
    return wake


def _compiled(tenant: TenantStore, wake: WakeRef) -> str:
    window = tenant.put_blob("window", '{"model": "claude-sonnet-4-5", "messages": []}')
    tenant.record_compile(
        CompileRecord(
            agent="a1",
            wake_id=wake.wake_id,
            step_key=f"wf:{wake.wake_id}:0:compile",
            call_index=0,
            as_of=T0,
            max_event_id=0,
            goal={"kind": "message", "text": "summarise"},
            policy_hash="p",
            snapshot_hash="s",
            window_hash=window,
            ledger_hash="l",
            stable_prefix_hash="x",
            input_tokens=10,
            tokens_by_bucket={},
        )
    )
    return window


async def test_a_retry_after_the_reply_was_stored_pays_once_and_records_once(
    store: Store, tenant: TenantStore
) -> None:
    wake = _wake(tenant)
    provider = CountingProvider()
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([]),
        providers=lambda name: provider,
        counter=EstimatingCounter(),
    )
    inp = CallModelIn(
        wake=wake,
        provider="anthropic",
        call_index=0,
        window_hash=_compiled(tenant, wake),
        at=T0,
        record=True,
        finish=True,
    )
    activities = ModelActivities(deps)
    env = ActivityEnvironment()
    loop_thread = threading.get_ident()
    with statement_threads(store) as threads:
        first = await env.run(activities.call_model, inp)
        again = await env.run(activities.call_model, inp)

    assert len(provider.requests) == 1, "the retry called the provider again"
    assert again.output_hash == first.output_hash
    assert again.handoff_id == first.handoff_id and first.handoff_id
    assert [e.text for e in tenant.events("a1", wake_id=wake.wake_id)] == ["All done."]
    assert len(tenant.handoffs("a1")) == 1
    assert [w.status for w in tenant.wakes("a1")] == ["done"]
    # Every statement ran in a worker thread, none on the event loop the activity runs on.
    assert threads and loop_thread not in threads


async def test_a_window_this_worker_compiled_is_sent_without_reading_it_back(
    store: Store, tenant: TenantStore
) -> None:
    wake = _wake(tenant)
    text = '{"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}'
    digest = content_hash(text)  # never stored: only the worker's cache has it
    provider = CountingProvider()

    def deps() -> ActivityDeps:
        return ActivityDeps(
            store=store,
            agents=AgentRegistry([]),
            providers=lambda name: provider,
            counter=EstimatingCounter(),
        )

    inp = CallModelIn(wake=wake, provider="anthropic", call_index=0, window_hash=digest)
    cold = deps()
    with pytest.raises(StoreError, match=f"no blob {digest}"):
        await ActivityEnvironment().run(ModelActivities(cold).call_model, inp)
    warm = deps()
    warm.windows.put(digest, text)
    await ActivityEnvironment().run(ModelActivities(warm).call_model, inp)
    assert provider.requests == [json.loads(text)]


@contextmanager
def statements(store: Store | TenantStore) -> Iterator[list[str]]:
    """The SQL of every statement sent while the block runs."""
    sent: list[str] = []

    def hook(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        sent.append(sql)

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield sent
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


async def test_a_call_this_worker_compiled_reads_no_compile_record_back(
    store: Store, tenant: TenantStore
) -> None:
    """The compile record the worker committed (its failover routes, the goal the closing
    handoff names) comes from the worker's cache; the reply it stores goes to the cache its
    tool calls read from. A worker that did not compile the step reads the record."""
    provider = CountingProvider()

    def deps() -> ActivityDeps:
        return ActivityDeps(
            store=store,
            agents=AgentRegistry([]),
            providers=lambda name: provider,
            counter=EstimatingCounter(),
        )

    def inp(ts: TenantStore, wake: WakeRef) -> CallModelIn:
        window = _compiled(ts, wake)
        return CallModelIn(
            wake=wake, provider="anthropic", call_index=0, window_hash=window, at=T0, finish=True
        )

    elsewhere = store.tenant(f"cold-{uuid.uuid4().hex[:8]}")  # a wake number of its own
    cold_wake, warm_wake = _wake(elsewhere), _wake(tenant)
    cold_inp, warm_inp = inp(elsewhere, cold_wake), inp(tenant, warm_wake)
    warm = deps()
    (rec,) = tenant.compiles(warm_wake.wake_id)
    warm.compiles.put((tenant.name, warm_wake.wake_id, 0), rec)
    with statements(store) as cold_sql:
        cold = await ActivityEnvironment().run(ModelActivities(deps()).call_model, cold_inp)
    with statements(store) as warm_sql:
        out = await ActivityEnvironment().run(ModelActivities(warm).call_model, warm_inp)
    assert sum("FROM compiles" in s for s in cold_sql) == 2  # the routes, then the goal
    assert not [s for s in warm_sql if "FROM compiles" in s]
    assert out.handoff_id and cold.handoff_id
    assert [w.status for w in tenant.wakes("a1") if w.wake_id == warm_wake.wake_id] == ["done"]
    assert warm.replies.get((tenant.name, out.output_hash)) == tenant.get_blob(out.output_hash)
