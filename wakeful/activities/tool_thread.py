"""Run a tool in a thread of its own, so a tool that never returns cannot keep an activity slot.

Python cannot stop a thread. A sync tool blocked in a system call would hold the thread of
the worker's activity pool that runs it, and every retry of it another, until the worker has
no slot left for anyone's compile or model call. So the activity thread only *waits* for the
tool, in short waits up to a deadline, and gives up at the deadline; the tool's thread is
left running (a daemon thread, so it never holds up the process's exit) and is counted here,
per tool, until it ends. A tool with :data:`MAX_LEFT_RUNNING` threads still running is not
started again in this process.

The tool's thread runs in a copy of the activity's context variables, so
``activity.heartbeat`` (``ToolContext.heartbeat``), ``activity.info`` and
``activity.is_cancelled`` work from it as from the activity thread: the SDK's heartbeat for a
threaded sync activity hands the call to the worker's event loop
(``asyncio.run_coroutine_threadsafe``), which is safe from any thread, and is a no-op once
the activity is done.

An ``async def`` tool returns a coroutine, which runs on an event loop of its own in the
tool's thread (``asyncio.run``), not on the worker's loop. The tool activity is a sync
activity, run by the worker's thread pool, because its substrate reads and writes are
blocking; and on the worker's loop, an async tool that blocks anywhere (a sync HTTP client,
a slow ``json.loads``) would stall every workflow task and heartbeat of the worker, with no
deadline that could stop it. In its own thread the tool keeps the deadline and the
left-running accounting of a sync tool, and gets more: it can be stopped, since a coroutine
takes a cancellation at any ``await``. So an async tool cancelled by Temporal, or past its
deadline, has its task cancelled on its loop, and ends there instead of running on.
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from temporalio import activity
from temporalio.exceptions import CancelledError

# How many calls of one tool may be left running past their deadline in one worker process
# before further calls of it are refused without starting a thread.
MAX_LEFT_RUNNING = 4

# How often the activity thread wakes while it waits. Temporal delivers a cancellation to a
# sync activity as an exception raised in its thread, which Python raises only between
# bytecodes, never inside a blocking wait: this bounds how late a cancellation is seen.
POLL_S = 0.1

# The share of the attempt's timeout kept back, so the error result is recorded before
# Temporal times the attempt out (at most MARGIN_MAX_S).
MARGIN_SHARE = 0.25
MARGIN_MAX_S = 2.0

Key = tuple[str, str, str]  # tenant, agent, tool name


@dataclass
class LeftRunning:
    """The tool threads of this process that their activity stopped waiting for, per tool.

    A thread counts while it is alive (``Thread.is_alive``, kept by the interpreter), so no
    code of the tool's thread has to run for it to stop counting."""

    _threads: dict[Key, list[threading.Thread]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, key: Key, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.setdefault(key, []).append(thread)

    def count(self, key: Key) -> int:
        with self._lock:
            alive = [t for t in self._threads.get(key, ()) if t.is_alive()]
            if alive:
                self._threads[key] = alive
            else:
                self._threads.pop(key, None)
            return len(alive)


LEFT_RUNNING = LeftRunning()


def budget_s(timeout_s: float) -> float:
    """Seconds a tool may run: its declared ``timeout_s`` less a margin for recording the
    result before Temporal times the attempt out, measured from when the tool starts on
    this host's monotonic clock.

    The declared timeout, not the attempt's: they are the same, except when the server has
    cut the attempt's timeout down to its workflow's deadline (a child agent with a timeout
    of its own). That workflow ends first then, and a heartbeating tool learns it as a
    cancellation; cutting the tool short too would race the workflow's timeout.
    """
    return timeout_s - min(MARGIN_MAX_S, timeout_s * MARGIN_SHARE)


class ToolThread:
    """One call of a tool, running in a daemon thread of its own."""

    def __init__(self, name: str, fn: Callable[[], str | Awaitable[str]]) -> None:
        self.name = name
        self._fn = fn
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._abandoned = False
        # An async tool's loop and task, while it runs: what abandon() cancels.
        self._task: tuple[asyncio.AbstractEventLoop, asyncio.Task[str]] | None = None
        self._result: str | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        self.thread = threading.Thread(
            target=context.run, args=(self._main,), name=f"wakeful-tool-{name}", daemon=True
        )

    def _main(self) -> None:
        try:
            result = self._fn()
            if inspect.isawaitable(result):
                result = asyncio.run(self._until_done(result))
            self._result = result
        except BaseException as exc:  # handed to the activity thread, which decides
            self._error = exc
        with self._lock:
            self._done.set()
            late = self._abandoned
        if late:
            activity.logger.warning(
                "tool %s returned after its activity stopped waiting; its %s was dropped",
                self.name,
                "error" if self._error is not None else "result",
            )

    async def _until_done(self, awaitable: Awaitable[str]) -> str:
        task = asyncio.ensure_future(awaitable)
        with self._lock:
            self._task = (asyncio.get_running_loop(), task)
            if self._abandoned:  # given up on before the coroutine started
                task.cancel()
        try:
            return await task
        finally:
            with self._lock:
                self._task = None

    def start(self) -> None:
        self.thread.start()

    def wait(self, budget_s: float | None) -> bool:
        """Wait for the tool until ``budget_s`` from now (forever if ``None``); whether it
        returned. A cancellation of the activity arrives here as ``CancelledError``."""
        deadline = None if budget_s is None else time.monotonic() + budget_s
        while not self._done.is_set():
            left = POLL_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            self._done.wait(min(left, POLL_S))
        return True

    def outcome(self) -> str:
        """The tool's return value, or its exception raised again."""
        if self._error is not None:
            raise self._error
        return cast(str, self._result)

    def abandon(self, *, cancelled: bool) -> bool:
        """Stop waiting for the tool; whether it is still running. On a cancellation the
        tool's thread is cancelled too, as the activity's own thread would have been: a tool
        that heartbeats or runs Python code stops there; one blocked in a system call
        stays blocked until the call returns."""
        with self._lock:
            if self._done.is_set():
                return False
            self._abandoned = True
            if self._task is not None:
                # An async tool stops at its next await, cancelled or past its deadline.
                loop, task = self._task
                loop.call_soon_threadsafe(task.cancel)
            elif cancelled and self.thread.ident is not None:
                _raise_in_thread(self.thread.ident, CancelledError)
            return True


def _raise_in_thread(thread_id: int, exc: type[BaseException]) -> None:
    # What the SDK does to a sync activity's own thread on cancellation.
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))
