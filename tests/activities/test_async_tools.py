"""Async tools in the tool activity (real Postgres): the coroutine runs on a loop of its own
in the tool's thread, so it keeps a sync tool's deadline, and it is stopped, not left
running, when the deadline passes or Temporal cancels the attempt."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from tests.activities.test_tool_activity import (
    _activities,
    _call,
    _env,
    _until,
    run_cancelled_once_entered,
)
from wakeful.activities.tool_thread import LeftRunning
from wakeful.agents import ToolContext
from wakeful.substrate.store import Store, TenantStore


def _async_probe(
    wait: Callable[[], Awaitable[object]],
    cancelled: threading.Event,
    entered: threading.Event | None = None,
) -> Callable[[dict[str, Any], ToolContext], Any]:
    """An async tool: its coroutine sets ``entered`` (if given), awaits ``wait()`` and sets
    ``cancelled`` when it is cancelled there."""

    async def waits(ctx: ToolContext) -> str:
        if entered is not None:
            entered.set()
        try:
            await wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    def probe(args: dict[str, Any], ctx: ToolContext) -> Any:
        return waits(ctx)

    return probe


def test_an_async_tool_past_its_deadline_is_cancelled_and_stops_counting(
    store: Store, tenant: TenantStore
) -> None:
    left = LeftRunning()
    cancelled = threading.Event()

    # An event nothing will set.
    probe = _async_probe(lambda: asyncio.Event().wait(), cancelled)
    activities = _activities(store, tenant, probe, left, timeout_s=0.4)
    inp = _call(tenant)
    out = _env().run(activities.run_tool, inp)
    assert out.is_error
    (result,) = tenant.events("a1", wake_id=inp.wake.wake_id)
    assert result.text.startswith("probe did not return within 0.3 s")
    _until(cancelled.is_set, "the async tool was not cancelled at its deadline")
    _until(lambda: left.count((tenant.name, "a1", "probe")) == 0, "its thread still counts")


def test_a_cancelled_async_tool_is_cancelled_on_its_loop_and_records_nothing(
    store: Store, tenant: TenantStore
) -> None:
    left = LeftRunning()
    entered, cancelled = threading.Event(), threading.Event()
    env = _env()

    # A long await: the loop sits in select().
    probe = _async_probe(lambda: asyncio.sleep(3600), cancelled, entered)
    activities = _activities(store, tenant, probe, left)
    inp = _call(tenant)
    run_cancelled_once_entered(env, activities, inp, entered)
    _until(cancelled.is_set, "the cancellation never reached the coroutine")
    _until(lambda: left.count((tenant.name, "a1", "probe")) == 0, "its thread still counts")
    assert not tenant.events("a1", wake_id=inp.wake.wake_id), "a cancelled tool left a result"
