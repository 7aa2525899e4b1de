"""The tool activity under cancellation, against a real Postgres.

Temporal cancels a running synchronous activity by raising ``CancelledError`` in its thread,
wherever that thread is. A cancelled tool must record nothing (a retry runs it again), and a
cancellation that lands during the substrate write must wait for the write to finish.

The tool runs in a thread of its own: one that does not return by the attempt's deadline
becomes an error result, and its thread is left running (tests release it at their end).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from temporalio import activity
from temporalio.exceptions import CancelledError
from temporalio.testing import ActivityEnvironment

from tests.activities.test_model_activity import T0, _wake, statements
from wakeful.activities.deps import ActivityDeps
from wakeful.activities.tool_thread import MAX_LEFT_RUNNING, LeftRunning
from wakeful.activities.tools import ToolActivities
from wakeful.activities.wake import step_key
from wakeful.agents import Agent, AgentRegistry, Tool, ToolContext
from wakeful.compiler import EstimatingCounter
from wakeful.contracts import RunToolIn, ToolCallRef, WakeRef
from wakeful.providers.base import ModelReply, ToolCall, Usage
from wakeful.substrate.store import Store, TenantStore

NO_ARGS = {"type": "object", "properties": {}}


def _activities(
    store: Store,
    tenant: TenantStore,
    fn: Any,
    left_running: LeftRunning | None = None,
    timeout_s: float = 60,
) -> ToolActivities:
    agent = Agent(
        name="a1",
        instructions="x",
        tools=(Tool("probe", "Probe.", NO_ARGS, fn, timeout_s=timeout_s, heartbeat_s=5),),
        tenant=tenant.name,
    )
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: None,  # type: ignore[arg-type,return-value]
        counter=EstimatingCounter(),
    )
    return ToolActivities(deps, left_running=left_running or LeftRunning())


def _call(tenant: TenantStore, wake: WakeRef | None = None) -> RunToolIn:
    wake = wake or _wake(tenant)
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


def _env() -> ActivityEnvironment:
    """An activity environment whose attempt has a 60 s timeout, like the probe's own (the
    tool's deadline derives from its declared ``timeout_s``)."""
    env = ActivityEnvironment()
    env.info = replace(env.info, start_to_close_timeout=timedelta(seconds=60))
    return env


@contextmanager
def cancel_on_event_insert(store: Store, env: ActivityEnvironment) -> Iterator[list[str]]:
    """Cancel the activity the moment its tool result is sent to the database."""
    sent: list[str] = []

    def hook(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        # (the result's event, written with its blob: one statement that inserts events)
        if "INSERT INTO EVENTS" in statement.upper() and not sent:
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
    env = _env()

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

    retry = _env().run(activities.run_tool, inp)
    assert (len(runs), retry.reused, retry.is_error) == (2, False, False)
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert result.text == "probe ok"


def test_a_tool_heartbeats_and_sees_its_activity_from_its_own_thread(
    store: Store, tenant: TenantStore
) -> None:
    """The tool's thread runs in a copy of the activity's context: without it,
    ``ctx.heartbeat`` would find no activity and silently send nothing."""
    env = _env()
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.heartbeat("halfway")
        return f"probe ok in {activity.info().activity_id} on {threading.current_thread().name}"

    inp = _call(tenant)
    out = env.run(_activities(store, tenant, probe).run_tool, inp)
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert (out.is_error, result.text) == (False, "probe ok in test on wakeful-tool-probe")
    assert beats == [("halfway",)]


def test_a_cancellation_during_the_write_is_raised_after_the_write_commits(
    store: Store, tenant: TenantStore
) -> None:
    env = _env()
    activities = _activities(store, tenant, lambda args, ctx: "probe ok")
    inp = _call(tenant)
    with cancel_on_event_insert(store, env) as sent, pytest.raises(CancelledError):
        env.run(activities.run_tool, inp)
    assert sent, "the tool result was never written"
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert (result.text, result.is_error) == ("probe ok", False)

    retry = _env().run(activities.run_tool, inp)
    assert (retry.reused, retry.event_id) == (True, result.id)


def _until(condition: Any, failure: str, limit_s: float = 30) -> None:
    """Wait for ``condition``; the limit is a failure timeout only."""
    tick = threading.Event()  # never set: a bounded pause between checks
    for _ in range(int(limit_s * 20)):
        if condition():
            return
        tick.wait(0.05)
    raise AssertionError(failure)


def run_cancelled_once_entered(
    env: ActivityEnvironment, activities: ToolActivities, inp: RunToolIn, entered: threading.Event
) -> None:
    """Run the tool activity and cancel the attempt from another thread once the tool has
    set ``entered``; the activity must end cancelled."""

    def cancel_once_entered() -> None:
        if entered.wait(30):
            env.cancel()

    canceller = threading.Thread(target=cancel_once_entered, daemon=True)
    canceller.start()
    with pytest.raises(CancelledError):
        env.run(activities.run_tool, inp)
    canceller.join(30)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_tool_that_does_not_return_becomes_an_error_and_its_late_result_is_dropped(
    store: Store, tenant: TenantStore, release: threading.Event
) -> None:
    left = LeftRunning()

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        release.wait()
        return "probe ok, too late"

    activities = _activities(store, tenant, probe, left, timeout_s=0.4)
    inp = _call(tenant)
    out = _env().run(activities.run_tool, inp)
    assert (out.is_error, out.reused) == (True, False)
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert result.text == (
        "probe did not return within 0.3 s; it was left running and will not be retried"
    )
    key = (tenant.name, "a1", "probe")
    assert left.count(key) == 1

    release.set()
    _until(lambda: left.count(key) == 0, "the released tool still counts as left running")
    (after,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert (after.id, after.text, after.is_error) == (result.id, result.text, True)
    again = _env().run(activities.run_tool, inp)
    assert (again.reused, again.event_id) == (True, result.id)


def test_a_tool_left_running_too_often_is_refused_without_a_thread(
    store: Store, tenant: TenantStore, release: threading.Event
) -> None:
    left = LeftRunning()
    entered: list[str] = []

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        entered.append(ctx.tool_call_id)
        release.wait()
        return "probe ok"

    activities = _activities(store, tenant, probe, left, timeout_s=0.2)
    wake = _wake(tenant)
    for _ in range(MAX_LEFT_RUNNING):
        assert _env().run(activities.run_tool, _call(tenant, wake)).is_error
    assert len(entered) == MAX_LEFT_RUNNING

    out = _env().run(activities.run_tool, _call(tenant, wake))
    refusal = tenant.events("a1", wake_id=wake.wake_id)[-1]
    assert (out.is_error, out.event_id, refusal.is_error) == (True, refusal.id, True)
    assert refusal.text == (
        f"probe not run: {MAX_LEFT_RUNNING} earlier calls of it are still running past their"
        " timeout in this worker; make the tool return within its timeout_s (give a blocking call"
        " a timeout of its own) and restart the worker"
    )
    assert len(entered) == MAX_LEFT_RUNNING  # no thread started for the refused call

    # Once the stuck calls end, the tool runs again.
    release.set()
    _until(lambda: left.count((tenant.name, "a1", "probe")) == 0, "released tools still count")
    ok = _env().run(activities.run_tool, _call(tenant, wake))
    result = tenant.events("a1", wake_id=wake.wake_id)[-1]
    assert (ok.is_error, ok.event_id, result.text) == (False, result.id, "probe ok")


def test_a_cancelled_tool_that_keeps_running_records_nothing_and_is_counted(
    store: Store, tenant: TenantStore, release: threading.Event
) -> None:
    """The cancellation is raised in the tool's thread too. This tool does not stop on it
    (as one blocked in a system call cannot): the activity ends at once all the same,
    records nothing, and counts the thread as left running until it ends."""
    left = LeftRunning()
    entered, cancelled_in_tool = threading.Event(), threading.Event()
    env = _env()  # the cancellation, not the deadline, ends this attempt

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        while not release.is_set():
            try:
                entered.set()
                release.wait()
            except CancelledError:
                cancelled_in_tool.set()
        return "probe ok"

    activities = _activities(store, tenant, probe, left)
    inp = _call(tenant)
    run_cancelled_once_entered(env, activities, inp, entered)
    assert not tenant.events("a1", wake_id=inp.wake.wake_id), "a cancelled tool left a result"
    key = (tenant.name, "a1", "probe")
    assert left.count(key) == 1

    release.set()
    _until(cancelled_in_tool.is_set, "the cancellation never reached the tool's thread")
    _until(lambda: left.count(key) == 0, "the tool's thread still counts after it ended")
    assert not tenant.events("a1", wake_id=inp.wake.wake_id), "a late result was recorded"


def test_a_reply_this_worker_stored_is_not_read_back(store: Store, tenant: TenantStore) -> None:
    """The model call's reply, which the worker's model activity stored and kept
    (``deps.replies``), is taken from there; a worker without it reads the blob. The
    wake's events are read once: for a result an earlier attempt recorded, and for the
    count of the tool's wrong calls; the result is written with its blob."""

    def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        return "probe ok"

    def run(activities: ToolActivities, inp: RunToolIn) -> list[str]:
        with statements(store) as sent:
            out = _env().run(activities.run_tool, inp)
        assert (out.is_error, out.reused) == (False, False)
        return [" ".join(s.split()[:2]) + (" blobs" if "FROM blobs" in s else "") for s in sent]

    wake = _wake(tenant)
    cold = run(_activities(store, tenant, probe), _call(tenant, wake))
    assert "SELECT blobs.kind, blobs" in cold, "a cold worker reads it"
    warm, inp = _activities(store, tenant, probe), _call(tenant, wake)
    warm.deps.replies.put((tenant.name, inp.output_hash), tenant.get_blob(inp.output_hash))
    # The result's blob and event: one statement.
    assert run(warm, inp) == ["SELECT events.id,", "WITH stored"]
