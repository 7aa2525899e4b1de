"""Publishing a streaming model call's pieces while it runs, off the workflow's history.

:class:`StreamPublisher` is the ``on_event`` a :class:`~wakeful.providers.base.StreamingProvider`
is given. It queues each piece (consecutive text pieces merge) and one writer task writes
what has queued since its last write, as rows of ``wake_stream`` announced on the
``wakeful_stream`` channel (:mod:`wakeful.substrate.stream_repo`), in a thread. A fast
stream therefore costs a few writes, not one per delta; a slow one shows each piece as it
comes. Temporal sees none of it: the activity still returns only ids and counts.

A write that fails is logged and publishing stops for the call: the preview is best-effort,
and the model call (whose stored reply is the record) goes on.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any

from wakeful.providers.base import StreamEvent
from wakeful.substrate.store import TenantStore

__all__ = ["StreamPublisher"]

log = logging.getLogger(__name__)


class StreamPublisher:
    """``async with StreamPublisher(ts, agent, wake_id, call_index) as on_event: ...``; leaving
    the block waits until every queued piece is written."""

    def __init__(self, ts: TenantStore, agent: str, wake_id: str, call_index: int) -> None:
        self._ts = ts.standalone()
        self._agent, self._wake_id, self._call_index = agent, wake_id, call_index
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._ready = asyncio.Event()
        self._closing = False
        self._failed = False
        self._task: asyncio.Task[None] | None = None

    def __call__(self, event: StreamEvent) -> None:
        if self._failed:
            return
        if event.kind == "text":
            if self._pending and self._pending[-1][0] == "text":
                self._pending[-1][1]["text"] += event.text
            else:
                self._pending.append(("text", {"text": event.text}))
        elif event.call is not None:
            call = event.call
            self._pending.append(
                ("tool_call", {"id": call.id, "name": call.name, "input": call.input})
            )
        self._ready.set()

    async def __aenter__(self) -> StreamPublisher:
        self._task = asyncio.create_task(self._run(), name=f"stream {self._wake_id}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True
        self._ready.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            batch, self._pending = self._pending, []
            if batch and not self._failed:
                try:
                    await asyncio.to_thread(self._write, batch)
                except Exception as exc:  # the preview is best-effort; the reply is not
                    self._failed = True
                    log.warning(
                        "streaming wake %s call %d: publishing stopped: %s",
                        self._wake_id,
                        self._call_index,
                        exc,
                    )
            if self._closing and not self._pending:
                return

    def _write(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        with self._ts.unit() as uow:
            uow.stream.publish_stream(self._agent, self._wake_id, self._call_index, batch)
