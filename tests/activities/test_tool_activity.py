"""The tool activity under cancellation, against a real Postgres.

Temporal cancels a running synchronous activity by raising ``CancelledError`` in its thread,
wherever that thread is. A cancelled tool must record nothing (a retry runs it again), and a
cancellation that lands during the substrate write must wait for the write to finish.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment

from tests.activities.test_model_activity import T0, _wake
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import step_key
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler import EstimatingCounter
from wakeful.contracts import RunToolIn, ToolCallRef
from wakeful.providers.base import ModelReply, ToolCall, Usage
from wakeful.substrate.store import Store, TenantStore

NO_ARGS = {"type": "object", "properties": {}}


def _activities(store: Store, tenant: TenantStore, fn: Any) -> ToolActivities:
    agent = Agent(
        name="a1",
        instructions="x",
        tools=(Tool("probe", "Probe.", NO_ARGS, fn, heartbeat_s=5),),
        tenant=tenant.name,
    )
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
    )
    return ToolActivities(deps)


def _call(tenant: TenantStore) -> RunToolIn:
    wake = _wake(tenant)
    call_id = f"call-{uuid.uuid4().hex[:6]}"
    reply = ModelReply(
        tool_calls=[ToolCall(id=call_id, name="probe", input={})],
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=3),
        model="m",
        provider="anthropic",
    )
    output_hash = tenant.put_blob("model_output", reply.model_dump_json())
    return RunToolIn(
        wake=wake,
        call_index=0,
        output_hash=output_hash,
        tool_call=ToolCallRef(id=call_id, name="probe"),
        at=T0,
    )


@contextmanager
def cancel_on_event_insert(store: Store, env: ActivityEnvironment) -> Iterator[list[str]]:
    """Cancel the activity the moment its tool result is sent to the database."""
    sent: list[str] = []

    def hook(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO EVENTS") and not sent:
            sent.append(statement)
            env.cancel()

    event.listen(store.engine, "before_cursor_execute", hook)
    try:
        yield sent
    finally:
        event.remove(store.engine, "before_cursor_execute", hook)


def test_a_tool_cancelled_while_it_runs_records_nothing_and_its_retry_runs_it_again(
    store: Store, tenant: TenantStore
) -> None:
    runs: list[int] = []
    env = ActivityEnvironment()

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        runs.append(1)
        if len(runs) == 1:
            env.cancel()  # as Temporal does when the workflow is gone: raised in this thread
            for _ in range(1000):
                ctx.heartbeat()
        return "probe ok"

    activities = _activities(store, tenant, probe)
    inp = _call(tenant)
    with pytest.raises(CancelledError):
        env.run(activities.run_tool, inp)
    assert tenant.event_by_step(step_key(inp.wake, 0, "result", inp.tool_call.id)) is None
    assert not tenant.events("a1", wake_id=inp.wake.wake_id), "a cancelled tool left a result"

    retry = ActivityEnvironment().run(activities.run_tool, inp)
    assert (len(runs), retry.reused, retry.is_error) == (2, False, False)
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert result.text == "probe ok"


def test_a_cancellation_during_the_write_is_raised_after_the_write_commits(
    store: Store, tenant: TenantStore
) -> None:
    env = ActivityEnvironment()
    activities = _activities(store, tenant, lambda args, ctx: "probe ok")
    inp = _call(tenant)
    with cancel_on_event_insert(store, env) as sent, pytest.raises(CancelledError):
        env.run(activities.run_tool, inp)
    assert sent, "the tool result was never written"
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert (result.text, result.is_error) == ("probe ok", False)

    retry = ActivityEnvironment().run(activities.run_tool, inp)
    assert (retry.reused, retry.event_id) == (True, result.id)
